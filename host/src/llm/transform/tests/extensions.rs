//! What a provider wants back with a step's calls (`extra_content`): Gemini's
//! thought signature on its call, Anthropic's signed thinking blocks on the
//! message (one per chunk, as `llm::adapter::anthropic_answer` gives them),
//! carried to `tool-input-available`'s `providerMetadata`; dropped with an
//! abandoned attempt.

use super::*;

fn chunk(delta: Value, finish: Option<&str>) -> String {
    json!({"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
}

fn metadata(chunks: &[UiChunk]) -> Vec<Option<Value>> {
    chunks
        .iter()
        .filter_map(|c| match c {
            UiChunk::ToolInputAvailable {
                provider_metadata, ..
            } => Some(provider_metadata.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_calls_extensions_and_the_steps_reach_tool_input_available() {
    let block =
        |n: u32| json!({"type": "thinking", "thinking": format!("t{n}"), "signature": format!("s{n}")});
    let thinking = |n| json!({"extra_content": {"anthropic": {"thinking_blocks": [block(n)]}}});
    let call = |i: u32, sig: Option<&str>| {
        let mut c = json!({"index": i, "id": format!("c{i}"), "type": "function", "function": {"name": "f", "arguments": "{}"}});
        if let Some(sig) = sig {
            c["extra_content"] = json!({"google": {"thought_signature": sig}});
        }
        json!({ "tool_calls": [c] })
    };
    let datas = [
        chunk(json!({"reasoning_content": "hmm"}), None),
        chunk(thinking(1), None),
        chunk(thinking(2), None),
        chunk(call(0, Some("c2ln")), None),
        chunk(call(1, None), None),
        chunk(json!({}), Some("tool_calls")),
        "[DONE]".to_string(),
    ];
    let (chunks, summary) = run(&datas, opts());
    assert_eq!(summary.tool_calls.len(), 2);
    assert_eq!(
        metadata(&chunks),
        vec![
            Some(json!({"google": {"thought_signature": "c2ln"},
                        "anthropic": {"thinking_blocks": [block(1), block(2)]}})),
            None,
        ]
    );

    let plain = [chunk(call(0, None), Some("tool_calls")), "[DONE]".to_string()];
    assert_eq!(metadata(&run(&plain, opts()).0), vec![None]);
}

#[test]
fn an_abandoned_attempts_extensions_are_dropped() {
    let mut t = StepTransformer::new(opts());
    let mut out = Vec::new();
    let thinking = json!({"extra_content": {"anthropic": {"thinking_blocks": [{"type": "redacted_thinking", "data": "x"}]}}});
    t.feed_data(&chunk(thinking, None), &mut out);
    t.abandon("the target failed", &mut out);
    let call = json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}]});
    t.feed_data(&chunk(call, Some("tool_calls")), &mut out);
    t.feed_data("[DONE]", &mut out);
    t.finish(&mut out);
    assert_eq!(metadata(&out), vec![None]);
}

#[test]
fn a_thinking_blocks_signature_given_as_it_ends_reaches_its_reasoning_end() {
    let signed = json!({"extra_content": {"anthropic": {"thinking_blocks": [
        {"type": "thinking", "thinking": "hmm", "signature": "EqQB"}]}}});
    let ends = |datas: &[String]| -> Vec<Option<Value>> {
        run(datas, opts())
            .0
            .into_iter()
            .filter_map(|c| match c {
                UiChunk::ReasoningEnd {
                    provider_metadata, ..
                } => Some(provider_metadata),
                _ => None,
            })
            .collect()
    };
    let datas = [
        chunk(json!({"reasoning_content": "hmm"}), None),
        chunk(signed.clone(), None),
        chunk(json!({"content": "ok"}), None),
        chunk(json!({}), Some("stop")),
        "[DONE]".to_string(),
    ];
    assert_eq!(
        ends(&datas),
        vec![Some(json!({"anthropic": {"signature": "EqQB"}}))]
    );
    // Unsigned reasoning (every other provider) ends without metadata.
    let plain = [
        chunk(json!({"reasoning_content": "hmm"}), None),
        chunk(json!({"content": "ok"}), Some("stop")),
        "[DONE]".to_string(),
    ];
    assert_eq!(ends(&plain), vec![None]);
}

#[test]
fn withheld_reasoning_is_a_reasoning_part_with_its_data_and_no_text() {
    let blocks = json!({"extra_content": {"anthropic": {"thinking_blocks": [
        {"type": "thinking", "thinking": "hmm", "signature": "EqQB"},
        {"type": "redacted_thinking", "data": "EmwK"}]}}});
    let datas = [
        chunk(json!({"reasoning_content": "hmm"}), None),
        chunk(blocks, None),
        chunk(json!({"content": "ok"}), Some("stop")),
        "[DONE]".to_string(),
    ];
    let reasoning: Vec<UiChunk> = run(&datas, opts())
        .0
        .into_iter()
        .filter(|c| {
            matches!(
                c,
                UiChunk::ReasoningStart { .. }
                    | UiChunk::ReasoningDelta { .. }
                    | UiChunk::ReasoningEnd { .. }
            )
        })
        .collect();
    let (first, second) = ("reasoning-0-0", "reasoning-0-1");
    assert_eq!(
        reasoning,
        vec![
            UiChunk::ReasoningStart {
                id: first.into(),
                provider_metadata: None
            },
            UiChunk::ReasoningDelta {
                id: first.into(),
                delta: "hmm".into()
            },
            UiChunk::ReasoningEnd {
                id: first.into(),
                provider_metadata: Some(json!({"anthropic": {"signature": "EqQB"}}))
            },
            UiChunk::ReasoningStart {
                id: second.into(),
                provider_metadata: Some(json!({"anthropic": {"redactedData": "EmwK"}}))
            },
            UiChunk::ReasoningEnd {
                id: second.into(),
                provider_metadata: None
            },
        ]
    );
}
