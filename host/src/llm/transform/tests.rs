//! Transformer tests: every recorded provider stream with its exact UI chunk
//! sequence, then one test per provider deviation.
//!
//! Long runs of deltas are compared in a compact form (`text-delta <id> xN "<joined>"`,
//! long text shown as head...tail with its length) so the expected sequences stay
//! readable; every other chunk is compared as full JSON.

use super::*;
use crate::sse;
use serde_json::json;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/openai-streams/");

fn fixture(name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(format!("{FIXTURES}{name}.chunks.txt")).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

fn opts() -> StepOptions {
    StepOptions {
        tool_id_prefix: "gen".into(),
        ..StepOptions::default()
    }
}

/// Replays data payloads as a provider would (each as one event, then `[DONE]`).
fn run<S: AsRef<str>>(datas: &[S], opts: StepOptions) -> (Vec<UiChunk>, StepSummary) {
    let mut t = StepTransformer::new(opts);
    let mut out = Vec::new();
    for d in datas {
        t.feed_data(d.as_ref(), &mut out);
    }
    let summary = t.finish(&mut out);
    (out, summary)
}

fn run_fixture(name: &str) -> (Vec<UiChunk>, StepSummary) {
    let mut lines = fixture(name);
    lines.push("[DONE]".into());
    run(&lines, opts())
}

fn shown(text: &str) -> String {
    if text.chars().count() <= 60 {
        format!("{text:?}")
    } else {
        let head: String = text.chars().take(25).collect();
        let tail: String = text
            .chars()
            .rev()
            .take(40)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        format!("{head:?}...{tail:?} ({} chars)", text.chars().count())
    }
}

/// Collapses runs of deltas of one part into one line; other chunks become JSON.
fn compact(chunks: &[UiChunk]) -> Vec<String> {
    let mut lines: Vec<(String, String, usize, String)> = Vec::new(); // kind, id, count, text
    for chunk in chunks {
        let (kind, id, text) = match chunk {
            UiChunk::TextDelta { id, delta } => ("text-delta", id, delta),
            UiChunk::ReasoningDelta { id, delta } => ("reasoning-delta", id, delta),
            UiChunk::ToolInputDelta {
                tool_call_id,
                input_text_delta,
            } => ("tool-input-delta", tool_call_id, input_text_delta),
            other => {
                lines.push((
                    "json".into(),
                    String::new(),
                    0,
                    serde_json::to_string(other).unwrap(),
                ));
                continue;
            }
        };
        match lines.last_mut() {
            Some((k, i, n, t)) if k == kind && i == id => {
                *n += 1;
                t.push_str(text);
            }
            _ => lines.push((kind.into(), id.clone(), 1, text.clone())),
        }
    }
    lines
        .into_iter()
        .map(|(kind, id, n, text)| {
            if kind == "json" {
                text
            } else {
                format!("{kind} {id} x{n} {}", shown(&text))
            }
        })
        .collect()
}

fn assert_chunks(chunks: &[UiChunk], want: &[&str]) {
    let got = compact(chunks);
    let same = got.len() == want.len()
        && got.iter().zip(want).all(|(g, w)| {
            if w.starts_with('{') {
                serde_json::from_str::<Value>(g).unwrap() == serde_json::from_str::<Value>(w).unwrap()
            } else {
                g == w
            }
        });
    assert!(same, "got:\n{}\nwant:\n{}", got.join("\n"), want.join("\n"));
}

/// An independent reading of a fixture: the concatenated content and reasoning.
fn naive_text(name: &str) -> (String, String) {
    let (mut text, mut reasoning) = (String::new(), String::new());
    for line in fixture(name) {
        let v: Value = serde_json::from_str(&line).unwrap();
        for c in v["choices"].as_array().unwrap() {
            let d = &c["delta"];
            text.push_str(d["content"].as_str().unwrap_or(""));
            reasoning.push_str(
                d["reasoning_content"]
                    .as_str()
                    .or(d["reasoning"].as_str())
                    .unwrap_or(""),
            );
        }
    }
    (text, reasoning)
}

#[test]
fn azure_model_router_skips_the_leading_filter_chunk() {
    let (chunks, summary) = run_fixture("openai--azure-model-router.1");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"text-start","id":"text-0-0"}"#,
            r#"text-delta text-0-0 x4 "Capital of Denmark.""#,
            r#"{"type":"text-end","id":"text-0-0"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"stop","messageMetadata":{"model":"gpt-5-nano-2025-08-07","usage":{"inputTokens":15,"outputTokens":78,"totalTokens":93,"reasoningTokens":64,"cachedInputTokens":0}}}"#,
        ],
    );
    assert_eq!(summary.text, "Capital of Denmark.");
    assert_eq!(summary.finish_reason, FinishReason::Stop);
    assert_eq!(summary.upstream_finish_reason.as_deref(), Some("stop"));
}

#[test]
fn openai_text_with_usage_in_a_trailing_chunk() {
    let (chunks, summary) = run_fixture("openai--openai-text");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"text-start","id":"text-0-0"}"#,
            r#"text-delta text-0-0 x300 "**Holiday Name:** Harmony"..."ed human experiences and mutual respect." (1724 chars)"#,
            r#"{"type":"text-end","id":"text-0-0"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"stop","messageMetadata":{"model":"gpt-4.1-nano-2025-04-14","usage":{"inputTokens":16,"outputTokens":300,"totalTokens":316,"reasoningTokens":0,"cachedInputTokens":0}}}"#,
        ],
    );
    assert_eq!(summary.text, naive_text("openai--openai-text").0);
}

#[test]
fn deepseek_text_with_usage_on_the_length_finish_chunk() {
    let (chunks, summary) = run_fixture("deepseek--deepseek-text");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"text-start","id":"text-0-0"}"#,
            r###"text-delta text-0-0 x400 "## **Holiday Name:** Star"..." observe 15 minutes of silent looking at" (1855 chars)"###,
            r#"{"type":"text-end","id":"text-0-0"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"length","messageMetadata":{"model":"deepseek-chat","usage":{"inputTokens":13,"outputTokens":400,"totalTokens":413,"cachedInputTokens":0}}}"#,
        ],
    );
    assert_eq!(summary.text, naive_text("deepseek--deepseek-text").0);
    assert_eq!(summary.finish_reason, FinishReason::Length);
}

#[test]
fn deepseek_reasoning_then_text() {
    let (chunks, summary) = run_fixture("deepseek--deepseek-reasoning");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"reasoning-start","id":"reasoning-0-0"}"#,
            r#"reasoning-delta reasoning-0-0 x205 "We need to count the numb"..."nd 9. So yes, 3.\n\nThus, the answer is 3." (606 chars)"#,
            r#"{"type":"reasoning-end","id":"reasoning-0-0"}"#,
            r#"{"type":"text-start","id":"text-0-1"}"#,
            r#"text-delta text-0-1 x13 "The word \"strawberry\" contains three \"r\"s.""#,
            r#"{"type":"text-end","id":"text-0-1"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"stop","messageMetadata":{"model":"deepseek-reasoner","usage":{"inputTokens":18,"outputTokens":219,"totalTokens":237,"reasoningTokens":205,"cachedInputTokens":0}}}"#,
        ],
    );
    let (text, reasoning) = naive_text("deepseek--deepseek-reasoning");
    assert_eq!((summary.text, summary.reasoning), (text, reasoning));
}

#[test]
fn deepseek_tool_call_in_fragments_after_reasoning() {
    let (chunks, summary) = run_fixture("deepseek--deepseek-tool-call");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"reasoning-start","id":"reasoning-0-0"}"#,
            r#"reasoning-delta reasoning-0-0 x39 "The user is asking for th"..."cation parameter set to \"San Francisco\"." (191 chars)"#,
            r#"{"type":"reasoning-end","id":"reasoning-0-0"}"#,
            r#"{"type":"tool-input-start","toolCallId":"call_00_ioIn7yN9p1ZOMNpDLwd4MgAF","toolName":"weather"}"#,
            r#"tool-input-delta call_00_ioIn7yN9p1ZOMNpDLwd4MgAF x10 "{\"location\": \"San Francisco\"}""#,
            r#"{"type":"tool-input-available","toolCallId":"call_00_ioIn7yN9p1ZOMNpDLwd4MgAF","toolName":"weather","input":{"location":"San Francisco"}}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"tool-calls","messageMetadata":{"model":"deepseek-reasoner","usage":{"inputTokens":339,"outputTokens":83,"totalTokens":422,"reasoningTokens":39,"cachedInputTokens":320}}}"#,
        ],
    );
    assert_eq!(
        summary.tool_calls,
        vec![ToolCall {
            id: "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF".into(),
            name: "weather".into(),
            arguments: Ok(json!({"location": "San Francisco"}))
        }]
    );
}

#[test]
fn groq_reasoning_field_and_x_groq_usage() {
    let (chunks, summary) = run_fixture("groq--groq-reasoning");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"reasoning-start","id":"reasoning-0-0"}"#,
            r#"reasoning-delta reasoning-0-0 x963 "Okay, let me try to figur"..."number of R's in \"strawberry\" is three.\n" (2952 chars)"#,
            r#"{"type":"reasoning-end","id":"reasoning-0-0"}"#,
            r#"{"type":"text-start","id":"text-0-1"}"#,
            r#"text-delta text-0-1 x139 "The word **\"strawberry\"**"..."awberry\".\n\n**Final Answer**: $\\boxed{3}$" (347 chars)"#,
            r#"{"type":"text-end","id":"text-0-1"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"stop","messageMetadata":{"model":"qwen/qwen3-32b","usage":{"inputTokens":17,"outputTokens":1107,"totalTokens":1124,"reasoningTokens":963}}}"#,
        ],
    );
    let (text, reasoning) = naive_text("groq--groq-reasoning");
    assert_eq!((summary.text, summary.reasoning), (text, reasoning));
}

#[test]
fn groq_text() {
    let (chunks, summary) = run_fixture("groq--groq-text");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"text-start","id":"text-0-0"}"#,
            r#"text-delta text-0-0 x661 "Introducing \"Luminaria\" -"..."per appreciation for the magic of light." (3189 chars)"#,
            r#"{"type":"text-end","id":"text-0-0"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"stop","messageMetadata":{"model":"llama-3.3-70b-versatile","usage":{"inputTokens":45,"outputTokens":662,"totalTokens":707}}}"#,
        ],
    );
    assert_eq!(summary.text, naive_text("groq--groq-text").0);
}

#[test]
fn groq_whole_tool_call_in_one_chunk() {
    let (chunks, summary) = run_fixture("groq--groq-tool-call");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"tool-input-start","toolCallId":"tk85n1k4m","toolName":"weather"}"#,
            r#"tool-input-delta tk85n1k4m x1 "{}""#,
            r#"{"type":"tool-input-available","toolCallId":"tk85n1k4m","toolName":"weather","input":{}}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"tool-calls","messageMetadata":{"model":"llama-3.3-70b-versatile","usage":{"inputTokens":210,"outputTokens":15,"totalTokens":225}}}"#,
        ],
    );
    assert_eq!(summary.tool_calls[0].arguments, Ok(json!({})));
}

#[test]
fn mistral_tool_call_without_index_and_finish_on_the_same_chunk() {
    let (chunks, summary) = run_fixture("mistral--mistral-tool-call");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"tool-input-start","toolCallId":"gSIMJiOkT","toolName":"weather"}"#,
            r#"tool-input-delta gSIMJiOkT x1 "{\"location\": \"San Francisco\"}""#,
            r#"{"type":"tool-input-available","toolCallId":"gSIMJiOkT","toolName":"weather","input":{"location":"San Francisco"}}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"tool-calls","messageMetadata":{"model":"mistral-small-latest","usage":{"inputTokens":124,"outputTokens":22,"totalTokens":146}}}"#,
        ],
    );
    assert_eq!(summary.finish_reason, FinishReason::ToolCalls);
}

#[test]
fn xai_reasoning_content_then_one_word() {
    let (chunks, _) = run_fixture("openai-compatible--xai-text");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"reasoning-start","id":"reasoning-0-0"}"#,
            r#"reasoning-delta reasoning-0-0 x340 "First, the user said: \"Sa"..."possible, just the word.\n\nResponse: Grok" (1455 chars)"#,
            r#"{"type":"reasoning-end","id":"reasoning-0-0"}"#,
            r#"{"type":"text-start","id":"text-0-1"}"#,
            r#"text-delta text-0-1 x2 "Grok""#,
            r#"{"type":"text-end","id":"text-0-1"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"stop","messageMetadata":{"model":"grok-3-mini","usage":{"inputTokens":12,"outputTokens":2,"totalTokens":354,"reasoningTokens":340,"cachedInputTokens":11}}}"#,
        ],
    );
}

#[test]
fn xai_tool_call_after_reasoning() {
    let (chunks, summary) = run_fixture("openai-compatible--xai-tool-call");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"reasoning-start","id":"reasoning-0-0"}"#,
            r#"reasoning-delta reasoning-0-0 x227 "First, the user is asking"..." for now, this is the logical next step." (1069 chars)"#,
            r#"{"type":"reasoning-end","id":"reasoning-0-0"}"#,
            r#"{"type":"tool-input-start","toolCallId":"call_79382389","toolName":"weather"}"#,
            r#"tool-input-delta call_79382389 x1 "{\"location\":\"San Francisco\"}""#,
            r#"{"type":"tool-input-available","toolCallId":"call_79382389","toolName":"weather","input":{"location":"San Francisco"}}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"tool-calls","messageMetadata":{"model":"grok-3-mini","usage":{"inputTokens":307,"outputTokens":26,"totalTokens":560,"reasoningTokens":227,"cachedInputTokens":306}}}"#,
        ],
    );
    assert_eq!(
        summary.reasoning,
        naive_text("openai-compatible--xai-tool-call").1
    );
}

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
        .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
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
    assert_eq!(summary.tool_calls[0].arguments, Err("{\"x\": tru".to_string()));
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
fn error_frames_and_malformed_chunks_end_the_step_with_an_error() {
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

    let datas = [
        chunk(json!({"content": "a"}), None),
        "{\"choices\": [".to_string(),
    ];
    let (_, summary) = run(&datas, opts());
    assert!(
        summary.error.as_deref().unwrap().contains("not valid JSON"),
        "{:?}",
        summary.error
    );
    assert_eq!(summary.finish_reason, FinishReason::Error);
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
