//! One test per provider deviation, on hand-built chunks: tool-call fragments,
//! finish reasons, usage placement, raw SSE quirks, errors.

use super::*;
use crate::sse;

/// Builds a chunk with one choice.
fn chunk(delta: Value, finish: Option<&str>) -> String {
    json!({"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
}

fn call(index: Option<u32>, id: Option<&str>, name: Option<&str>, args: &str) -> Value {
    let mut v = json!({"function": {"arguments": args}});
    if let Some(i) = index {
        v["index"] = json!(i);
    }
    if let Some(id) = id {
        v["id"] = json!(id);
    }
    if let Some(n) = name {
        v["function"]["name"] = json!(n);
    }
    v
}

fn tools(calls: Vec<Value>) -> String {
    chunk(json!({"tool_calls": calls}), None)
}

fn calls_of(summary: &StepSummary) -> Vec<(String, String, Result<Value, String>)> {
    summary
        .tool_calls
        .iter()
        .map(|c| {
            let arguments = c.arguments.clone().map_err(|e| e.raw().to_string());
            (c.id.clone(), c.name.clone(), arguments)
        })
        .collect()
}

#[test]
fn index_always_zero_with_empty_id_continuations() {
    let datas = [
        tools(vec![call(Some(0), Some("a"), Some("hub_list"), "")]),
        tools(vec![call(Some(0), Some(""), None, "{\"namespace\":")]),
        tools(vec![call(Some(0), Some(""), None, "\"w\"}")]),
        tools(vec![call(Some(0), Some("b"), Some("hub_search"), "{\"q\"")]),
        tools(vec![call(Some(0), Some(""), None, ":\"x\"}")]),
        chunk(json!({}), Some("tool_calls")),
        "[DONE]".to_string(),
    ];
    let (chunks, summary) = run(&datas, opts());
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"tool-input-start","toolCallId":"a","toolName":"hub_list"}"#,
            r#"tool-input-delta a x2 "{\"namespace\":\"w\"}""#,
            r#"{"type":"tool-input-start","toolCallId":"b","toolName":"hub_search"}"#,
            r#"tool-input-delta b x2 "{\"q\":\"x\"}""#,
            r#"{"type":"tool-input-available","toolCallId":"a","toolName":"hub_list","input":{"namespace":"w"}}"#,
            r#"{"type":"tool-input-available","toolCallId":"b","toolName":"hub_search","input":{"q":"x"}}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"tool-calls","messageMetadata":{"model":"m"}}"#,
        ],
    );
    assert_eq!(summary.tool_calls.len(), 2);
}

#[test]
fn index_starting_at_one_and_interleaved_fragments() {
    let datas = [
        tools(vec![
            call(Some(1), Some("a"), Some("f"), "{\"x\":"),
            call(Some(2), Some("b"), Some("g"), "["),
        ]),
        tools(vec![
            call(Some(2), None, None, "1]"),
            call(Some(1), None, None, "1}"),
        ]),
        chunk(json!({}), Some("tool_calls")),
    ];
    let (_, summary) = run(&datas, opts());
    assert_eq!(
        calls_of(&summary),
        vec![
            ("a".into(), "f".into(), Ok(json!({"x": 1}))),
            ("b".into(), "g".into(), Ok(json!([1])))
        ]
    );
}

#[test]
fn missing_index_and_id_continue_the_latest_call_and_missing_ids_are_generated() {
    let datas = [
        tools(vec![call(None, None, Some("f"), "{\"a\"")]),
        tools(vec![call(None, None, None, ":1}")]),
        tools(vec![call(None, Some("z"), Some("g"), "{}")]),
        chunk(json!({}), Some("tool_calls")),
    ];
    let (_, summary) = run(&datas, opts());
    assert_eq!(
        calls_of(&summary),
        vec![
            ("gen_0".into(), "f".into(), Ok(json!({"a": 1}))),
            ("z".into(), "g".into(), Ok(json!({})))
        ]
    );
}

#[test]
fn a_name_that_arrives_after_the_id_delays_the_start() {
    let datas = [
        tools(vec![call(Some(0), Some("a"), None, "{\"k\":")]),
        tools(vec![call(Some(0), None, Some("f"), "2}")]),
        chunk(json!({}), Some("tool_calls")),
    ];
    let (chunks, _) = run(&datas, opts());
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"tool-input-start","toolCallId":"a","toolName":"f"}"#,
            r#"tool-input-delta a x1 "{\"k\":2}""#,
            r#"{"type":"tool-input-available","toolCallId":"a","toolName":"f","input":{"k":2}}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"tool-calls","messageMetadata":{"model":"m"}}"#,
        ],
    );
}

#[test]
fn stop_with_tool_calls_is_tool_calls_and_tool_calls_without_calls_is_stop() {
    let datas = [
        tools(vec![call(Some(0), Some("a"), Some("f"), "{}")]),
        chunk(json!({}), Some("stop")),
    ];
    let (_, summary) = run(&datas, opts());
    assert_eq!(summary.finish_reason, FinishReason::ToolCalls);
    assert_eq!(summary.upstream_finish_reason.as_deref(), Some("stop"));

    let datas = [
        chunk(json!({"content": "hi"}), None),
        chunk(json!({}), Some("tool_calls")),
    ];
    assert_eq!(run(&datas, opts()).1.finish_reason, FinishReason::Stop);

    let datas = [chunk(json!({"content": "hi"}), Some("content_filter"))];
    assert_eq!(run(&datas, opts()).1.finish_reason, FinishReason::ContentFilter);
    let datas = [chunk(json!({"content": "hi"}), Some("eos_token"))];
    assert_eq!(run(&datas, opts()).1.finish_reason, FinishReason::Other);
}

#[test]
fn invalid_tool_json_becomes_tool_input_error_with_the_raw_text() {
    let datas = [
        tools(vec![call(Some(0), Some("a"), Some("f"), "{\"x\": tru")]),
        chunk(json!({}), Some("tool_calls")),
    ];
    let (chunks, summary) = run(&datas, opts());
    let err = chunks
        .iter()
        .find(|c| matches!(c, UiChunk::ToolInputError { .. }))
        .unwrap();
    let UiChunk::ToolInputError {
        tool_call_id,
        tool_name,
        input,
        error_text,
    } = err
    else {
        unreachable!()
    };
    assert_eq!(
        (tool_call_id.as_str(), tool_name.as_str(), input),
        ("a", "f", &json!("{\"x\": tru"))
    );
    assert!(error_text.contains("not valid JSON"), "{error_text}");
    assert_eq!(
        summary.tool_calls[0].arguments.as_ref().map_err(|e| e.raw()),
        Err("{\"x\": tru")
    );
    assert!(
        !chunks
            .iter()
            .any(|c| matches!(c, UiChunk::ToolInputAvailable { .. }))
    );
    // A prefix that parses is not final: only the end of the stream decides.
    let datas = [
        tools(vec![call(Some(0), Some("a"), Some("f"), "{\"n\":1}")]),
        tools(vec![call(Some(0), None, None, " trailing")]),
        chunk(json!({}), Some("tool_calls")),
    ];
    assert!(run(&datas, opts()).1.tool_calls[0].arguments.is_err());
}

#[test]
fn usage_in_x_groq_only_and_duplicate_finish_chunks() {
    let mut finish: Value = serde_json::from_str(&chunk(json!({}), Some("stop"))).unwrap();
    finish["x_groq"] =
        json!({"id": "req", "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}});
    let datas = [
        chunk(json!({"content": "a"}), None),
        finish.to_string(),
        chunk(json!({}), Some("length")),
    ];
    let (chunks, summary) = run(&datas, opts());
    assert_eq!(
        summary.usage,
        Some(Usage {
            input_tokens: 3,
            output_tokens: 4,
            total_tokens: 7,
            ..Usage::default()
        })
    );
    assert_eq!(summary.finish_reason, FinishReason::Stop);
    assert_eq!(
        chunks
            .iter()
            .filter(|c| matches!(c, UiChunk::Finish { .. }))
            .count(),
        1
    );
    assert_eq!(
        chunks.iter().filter(|c| matches!(c, UiChunk::FinishStep)).count(),
        1
    );
}

#[test]
fn processing_comments_and_crlf_from_a_raw_sse_stream() {
    let raw = format!(
        ": PROCESSING\r\n\r\ndata: {}\r\n\r\n: PROCESSING\r\n\r\ndata: {}\r\n\r\ndata: [DONE]\r\n\r\n",
        chunk(json!({"content": "ok"}), None),
        chunk(json!({}), Some("stop"))
    );
    let mut parser = sse::Parser::new(1 << 20);
    let mut t = StepTransformer::new(opts());
    let mut out = Vec::new();
    for piece in raw.as_bytes().chunks(7) {
        parser
            .feed(piece, &mut |e| t.feed_data(e.data, &mut out))
            .unwrap();
    }
    parser.finish(&mut |e| t.feed_data(e.data, &mut out)).unwrap();
    assert!(t.is_done());
    let summary = t.finish(&mut out);
    assert_eq!(
        (summary.text.as_str(), summary.finish_reason, summary.error),
        ("ok", FinishReason::Stop, None)
    );
}

#[test]
fn no_done_is_fine_after_a_finish_reason_but_a_cut_stream_is_an_error() {
    let datas = [chunk(json!({"content": "a"}), Some("stop"))];
    let (_, summary) = run(&datas, opts());
    assert_eq!((summary.finish_reason, summary.error), (FinishReason::Stop, None));

    let datas = [tools(vec![call(Some(0), Some("a"), Some("f"), "{\"x\":1}")])];
    let (chunks, summary) = run(&datas, opts());
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"tool-input-start","toolCallId":"a","toolName":"f"}"#,
            r#"tool-input-delta a x1 "{\"x\":1}""#,
            r#"{"type":"error","errorText":"the upstream stream ended before the response was complete"}"#,
            r#"{"type":"tool-input-error","toolCallId":"a","toolName":"f","input":"{\"x\":1}","errorText":"the response ended with an error before this tool call was complete"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"error","messageMetadata":{"model":"m"}}"#,
        ],
    );
    assert!(
        summary.tool_calls[0].arguments.is_err(),
        "a cut-off call must not be run"
    );
}

#[test]
fn error_frames_end_the_step_with_an_error() {
    let datas = [
        chunk(json!({"content": "par"}), None),
        r#"{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}"#
            .to_string(),
        chunk(json!({"content": "ignored"}), None),
    ];
    let (chunks, summary) = run(&datas, opts());
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"text-start","id":"text-0-0"}"#,
            r#"text-delta text-0-0 x1 "par""#,
            r#"{"type":"error","errorText":"The server had an error"}"#,
            r#"{"type":"text-end","id":"text-0-0"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"error","messageMetadata":{"model":"m"}}"#,
        ],
    );
    assert_eq!(summary.text, "par");
}

#[test]
fn a_malformed_chunk_is_skipped_and_a_run_past_the_limit_ends_the_step() {
    let bad = "{\"choices\": [".to_string();
    // One bad line between good ones: skipped, the answer goes on.
    let datas = [
        chunk(json!({"content": "a"}), None),
        bad.clone(),
        chunk(json!({"content": "b"}), Some("stop")),
    ];
    let (_, summary) = run(&datas, opts());
    assert_eq!((summary.error, summary.text.as_str()), (None, "ab"));
    assert_eq!(summary.finish_reason, FinishReason::Stop);
    // As many in a row as the limit (3 by default), then a good one: still fine.
    let mut datas = vec![chunk(json!({"content": "a"}), None)];
    datas.extend(std::iter::repeat_n(bad.clone(), 3));
    datas.push(chunk(json!({"content": "b"}), Some("stop")));
    let (_, summary) = run(&datas, opts());
    assert_eq!(summary.error, None);
    // One more in a row: the stream is broken.
    let mut datas = vec![chunk(json!({"content": "a"}), None)];
    datas.extend(std::iter::repeat_n(bad, 4));
    datas.push(chunk(json!({"content": "ignored"}), Some("stop")));
    let (_, summary) = run(&datas, opts());
    let error = summary.error.as_deref().unwrap();
    assert!(
        error.contains("4 chunks in a row") && error.contains("max_malformed_chunks (3)"),
        "{error}"
    );
    assert_eq!(summary.finish_reason, FinishReason::Error);
    assert_eq!(summary.text, "a");
}

#[test]
fn alternating_reasoning_and_text_get_fresh_ids_and_other_choices_are_ignored() {
    let mut two_choices: Value = serde_json::from_str(&chunk(json!({"content": "B"}), None)).unwrap();
    two_choices["choices"].as_array_mut().unwrap().insert(
        0,
        json!({"index": 1, "delta": {"content": "other choice"}, "finish_reason": null}),
    );
    let datas = [
        chunk(json!({"reasoning": "r1", "content": ""}), None),
        chunk(json!({"content": "A"}), None),
        chunk(json!({"reasoning_content": "r2", "content": null}), None),
        two_choices.to_string(),
        chunk(json!({"refusal": "no"}), Some("stop")),
    ];
    let (chunks, summary) = run(&datas, opts());
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"reasoning-start","id":"reasoning-0-0"}"#,
            r#"reasoning-delta reasoning-0-0 x1 "r1""#,
            r#"{"type":"reasoning-end","id":"reasoning-0-0"}"#,
            r#"{"type":"text-start","id":"text-0-1"}"#,
            r#"text-delta text-0-1 x1 "A""#,
            r#"{"type":"text-end","id":"text-0-1"}"#,
            r#"{"type":"reasoning-start","id":"reasoning-0-2"}"#,
            r#"reasoning-delta reasoning-0-2 x1 "r2""#,
            r#"{"type":"reasoning-end","id":"reasoning-0-2"}"#,
            r#"{"type":"text-start","id":"text-0-3"}"#,
            r#"text-delta text-0-3 x2 "Bno""#,
            r#"{"type":"text-end","id":"text-0-3"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"stop","messageMetadata":{"model":"m"}}"#,
        ],
    );
    assert_eq!(
        (summary.text.as_str(), summary.reasoning.as_str()),
        ("ABno", "r1r2")
    );
}

#[test]
fn agent_loop_steps_leave_start_and_finish_to_the_caller() {
    let step = StepOptions {
        emit_start: false,
        emit_finish: false,
        step: 2,
        tool_id_prefix: "gen".into(),
        ..StepOptions::default()
    };
    let datas = [
        chunk(json!({"content": "x"}), None),
        tools(vec![call(Some(0), None, Some("hub_call"), "")]),
    ];
    let mut datas = datas.to_vec();
    datas.push(chunk(json!({}), Some("tool_calls")));
    let (chunks, summary) = run(&datas, step);
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start-step"}"#,
            r#"{"type":"text-start","id":"text-2-0"}"#,
            r#"text-delta text-2-0 x1 "x""#,
            r#"{"type":"text-end","id":"text-2-0"}"#,
            r#"{"type":"tool-input-start","toolCallId":"gen_0","toolName":"hub_call"}"#,
            r#"{"type":"tool-input-available","toolCallId":"gen_0","toolName":"hub_call","input":{}}"#,
            r#"{"type":"finish-step"}"#,
        ],
    );
    assert_eq!(summary.model.as_deref(), Some("m"));

    let with_meta = StepOptions {
        message_id: Some("msg-1".into()),
        finish_metadata: [("provider".to_string(), json!("local"))].into_iter().collect(),
        ..opts()
    };
    let (chunks, _) = run(&[chunk(json!({}), Some("stop"))], with_meta);
    assert_eq!(
        serde_json::to_value(&chunks[0]).unwrap(),
        json!({"type": "start", "messageId": "msg-1"})
    );
    assert_eq!(
        serde_json::to_value(chunks.last().unwrap()).unwrap(),
        json!({"type": "finish", "finishReason": "stop", "messageMetadata": {"provider": "local", "model": "m"}})
    );
}

#[test]
fn invented_tool_call_ids_are_random_by_default() {
    let datas = [
        tools(vec![call(Some(0), None, Some("f"), "{}")]),
        chunk(json!({}), Some("tool_calls")),
    ];
    let (a, b) = (
        run(&datas, StepOptions::default()).1,
        run(&datas, StepOptions::default()).1,
    );
    assert!(
        a.tool_calls[0].id.starts_with("call_") && a.tool_calls[0].id.ends_with("_0"),
        "{}",
        a.tool_calls[0].id
    );
    assert_ne!(a.tool_calls[0].id, b.tool_calls[0].id);
}

#[test]
fn a_transport_failure_reported_by_the_caller_is_one_error_chunk() {
    let mut t = StepTransformer::new(opts());
    let mut out = Vec::new();
    t.feed_data(&chunk(json!({"content": "a"}), None), &mut out);
    t.fail("upstream idle for 5s", &mut out);
    t.fail("second failure is not reported", &mut out);
    assert!(t.is_done());
    let summary = t.finish(&mut out);
    assert_eq!(
        out.iter().filter(|c| matches!(c, UiChunk::Error { .. })).count(),
        1
    );
    assert_eq!(summary.error.as_deref(), Some("upstream idle for 5s"));
}

#[test]
fn cumulative_text_deltas_are_sent_as_new_text_only() {
    let datas = [
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"reasoning_content": "Think"}), None),
        chunk(json!({"reasoning_content": "Think more"}), None),
        chunk(json!({"content": "The"}), None),
        chunk(json!({"content": "The answer"}), None),
        chunk(json!({"content": "The answer is 4."}), Some("stop")),
        "[DONE]".to_string(),
    ];
    let cumulative = StepOptions {
        deltas: crate::config::StreamDeltas::Cumulative,
        ..opts()
    };
    for opts in [
        cumulative.clone(),
        StepOptions {
            deltas: crate::config::StreamDeltas::Auto,
            ..opts()
        },
    ] {
        let (out, summary) = run(&datas, opts);
        assert_eq!(summary.text, "The answer is 4.");
        assert_eq!(summary.reasoning, "Think more");
        let deltas: Vec<&str> = out
            .iter()
            .filter_map(|c| match c {
                UiChunk::TextDelta { delta, .. } | UiChunk::ReasoningDelta { delta, .. } => {
                    Some(delta.as_str())
                }
                _ => None,
            })
            .collect();
        assert_eq!(deltas, ["Think", " more", "The", " answer", " is 4."]);
    }
    // The same stream read as incremental repeats the text, as the server said.
    assert_eq!(run(&datas, opts()).1.text, "TheThe answerThe answer is 4.");
}

#[test]
fn an_abandoned_attempt_closes_its_parts_and_the_next_one_gets_fresh_ids() {
    let mut t = StepTransformer::new(opts());
    let mut out = Vec::new();
    t.feed_data(&chunk(json!({"content": "partial"}), None), &mut out);
    t.feed_data(
        &tools(vec![call(Some(0), Some("c1"), Some("hub_list"), "{")]),
        &mut out,
    );
    t.fail("the upstream connection failed mid-response", &mut out);
    assert!(t.has_output());
    assert_eq!(t.failure(), Some("the upstream connection failed mid-response"));
    out.clear();
    t.abandon("provider failed", &mut out);
    assert_eq!(
        serde_json::to_value(&out).unwrap(),
        json!([{"type": "tool-input-error", "toolCallId": "c1", "toolName": "hub_list", "input": "{",
                "errorText": "discarded, not run: provider failed"}])
    );
    assert!(!t.has_output() && t.failure().is_none() && !t.is_done());
    out.clear();
    t.feed_data(&chunk(json!({"content": "clean"}), Some("stop")), &mut out);
    let summary = t.finish(&mut out);
    assert_eq!(summary.text, "clean");
    assert!(summary.tool_calls.is_empty() && summary.error.is_none());
    assert!(
        matches!(&out[0], UiChunk::TextStart { id } if id == "text-0-1"),
        "{out:?}"
    );
}
