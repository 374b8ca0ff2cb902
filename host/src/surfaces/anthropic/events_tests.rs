use super::*;
use crate::llm::{StepOptions, StepTransformer};
use crate::surfaces::anthropic::collect::{AnswerFailed, Collector};

/// The events for an upstream OpenAI stream (`data` of each event) with client tools.
fn events_for(datas: &[Value]) -> Vec<AnthropicEvent> {
    let mut t = StepTransformer::new(StepOptions {
        emit_start: false,
        ..StepOptions::default()
    });
    let mut chunks = Vec::new();
    for d in datas {
        t.feed_data(&d.to_string(), &mut chunks);
    }
    t.feed_data("[DONE]", &mut chunks);
    t.finish(&mut chunks);
    encode(ToolMode::Client, &chunks)
}

fn encode(mode: ToolMode, chunks: &[UiChunk]) -> Vec<AnthropicEvent> {
    let mut e = Encoder::new(mode, "up/m");
    let mut out = Vec::new();
    for c in chunks {
        e.push(c, &mut out);
    }
    assert!(e.is_ended());
    out
}

fn names(events: &[AnthropicEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e.data.get("index") {
            Some(i) => format!("{}#{i}", e.name),
            None => e.name.to_string(),
        })
        .collect()
}

fn collect(events: &[AnthropicEvent]) -> Result<Value, AnswerFailed> {
    let mut c = Collector::default();
    for e in events {
        c.apply(e);
    }
    c.finish()
}

fn delta(d: Value) -> Value {
    json!({"id": "c", "object": "chat.completion.chunk", "model": "gpt-x", "choices": [{"index": 0, "delta": d, "finish_reason": null}]})
}

fn finish(reason: &str) -> Value {
    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

#[test]
fn text_streams_as_one_block_with_usage_at_the_end() {
    let events = events_for(&[
        delta(json!({"role": "assistant", "content": "Hel"})),
        delta(json!({"content": "lo"})),
        finish("stop"),
        json!({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 4}}}),
    ]);
    assert_eq!(
        names(&events),
        [
            "message_start",
            "ping",
            "content_block_start#0",
            "content_block_delta#0",
            "content_block_delta#0",
            "content_block_stop#0",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(events[0].data["type"], "message_start");
    assert_eq!(events[0].data["message"]["model"], "up/m");
    assert!(
        events[0].data["message"]["id"]
            .as_str()
            .unwrap()
            .starts_with("msg_")
    );
    assert_eq!(
        events[3].data["delta"],
        json!({"type": "text_delta", "text": "Hel"})
    );
    assert_eq!(
        events[6].data,
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
            "usage": {"input_tokens": 8, "output_tokens": 2, "cache_read_input_tokens": 4}})
    );
    let message = collect(&events).unwrap();
    assert_eq!(message["content"], json!([{"type": "text", "text": "Hello"}]));
    assert_eq!(message["stop_reason"], "end_turn");
    assert_eq!(message["usage"]["output_tokens"], 2);
    assert_eq!(message["role"], "assistant");
    assert_eq!(message["type"], "message");
}

#[test]
fn interleaved_tool_calls_go_out_one_block_after_another() {
    let call = |index: u32, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut c = json!({"index": index, "function": {"arguments": args}});
        if let Some(id) = id {
            c["id"] = json!(id);
        }
        if let Some(name) = name {
            c["function"]["name"] = json!(name);
        }
        delta(json!({"tool_calls": [c]}))
    };
    let events = events_for(&[
        delta(json!({"content": "Checking."})),
        call(0, Some("call_a"), Some("weather"), "{\"city\":"),
        call(1, Some("call_b"), Some("time"), "{\"tz\":"),
        call(0, None, None, "\"Paris\"}"),
        call(1, None, None, "\"CET\"}"),
        finish("tool_calls"),
    ]);
    assert_eq!(
        names(&events),
        [
            "message_start",
            "ping",
            "content_block_start#0",
            "content_block_delta#0",
            "content_block_stop#0",
            "content_block_start#1",
            "content_block_delta#1",
            "content_block_delta#1",
            "content_block_stop#1",
            "content_block_start#2",
            "content_block_delta#2",
            "content_block_delta#2",
            "content_block_stop#2",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(
        events[5].data["content_block"],
        json!({"type": "tool_use", "id": "call_a", "name": "weather", "input": {}})
    );
    assert_eq!(events[13].data["delta"]["stop_reason"], "tool_use");
    let message = collect(&events).unwrap();
    assert_eq!(message["content"][1]["input"], json!({"city": "Paris"}));
    assert_eq!(message["content"][2]["input"], json!({"tz": "CET"}));
    assert_eq!(message["content"][2]["name"], "time");
}

#[test]
fn reasoning_becomes_thinking_and_length_is_max_tokens() {
    let events = events_for(&[
        delta(json!({"reasoning_content": "think"})),
        delta(json!({"content": "ok"})),
        finish("length"),
    ]);
    let message = collect(&events).unwrap();
    assert_eq!(
        message["content"],
        json!([{"type": "thinking", "thinking": "think", "signature": ""}, {"type": "text", "text": "ok"}])
    );
    assert_eq!(message["stop_reason"], "max_tokens");
}

#[test]
fn a_signed_thinking_block_gets_its_signature_delta_before_it_stops() {
    let signed = json!({"anthropic": {"thinking_blocks": [{"type": "thinking", "thinking": "think", "signature": "EqQB"}]}});
    let events = events_for(&[
        delta(json!({"reasoning_content": "think"})),
        delta(json!({ "extra_content": signed })),
        delta(json!({"content": "ok"})),
        finish("stop"),
    ]);
    let at = |name: &str, kind: &str| {
        events
            .iter()
            .position(|e| e.name == name && e.data["index"] == 0 && e.data["delta"]["type"] == kind)
            .unwrap_or_else(|| panic!("no {name} {kind}: {:?}", names(&events)))
    };
    assert!(at("content_block_delta", "thinking_delta") < at("content_block_delta", "signature_delta"));
    let stop = events
        .iter()
        .position(|e| e.name == "content_block_stop" && e.data["index"] == 0);
    assert!(at("content_block_delta", "signature_delta") < stop.unwrap());
    let message = collect(&events).unwrap();
    assert_eq!(
        message["content"][0],
        json!({"type": "thinking", "thinking": "think", "signature": "EqQB"})
    );
}

#[test]
fn withheld_reasoning_is_a_redacted_thinking_block_as_it_came() {
    let redacted = json!({"type": "redacted_thinking", "data": "EmwK"});
    let events = events_for(&[
        delta(json!({ "extra_content": {"anthropic": {"thinking_blocks": [redacted.clone()]}} })),
        delta(json!({"content": "ok"})),
        finish("stop"),
    ]);
    let start = events
        .iter()
        .find(|e| e.name == "content_block_start" && e.data["index"] == 0)
        .unwrap_or_else(|| panic!("{:?}", names(&events)));
    assert_eq!(start.data["content_block"], redacted);
    let message = collect(&events).unwrap();
    assert_eq!(
        message["content"],
        json!([redacted, {"type": "text", "text": "ok"}])
    );
}

#[test]
fn an_upstream_error_is_one_error_event_and_nothing_after() {
    let events = events_for(&[
        delta(json!({"content": "Hel"})),
        json!({"error": {"message": "overloaded", "type": "server_error"}}),
    ]);
    assert_eq!(
        names(&events),
        [
            "message_start",
            "ping",
            "content_block_start#0",
            "content_block_delta#0",
            "error"
        ]
    );
    assert_eq!(
        events[4].data,
        json!({"type": "error", "error": {"type": "api_error", "message": "overloaded"}})
    );
    assert_eq!(collect(&events), Err(AnswerFailed("overloaded".to_string())));
}

#[test]
fn hub_tool_calls_and_results_are_mcp_blocks() {
    let chunks = [
        UiChunk::Start {
            message_id: Some("m".into()),
            message_metadata: None,
        },
        UiChunk::StartStep,
        UiChunk::ToolInputStart {
            tool_call_id: "c1".into(),
            tool_name: "hub_call".into(),
            dynamic: None,
            title: None,
        },
        UiChunk::ToolInputDelta {
            tool_call_id: "c1".into(),
            input_text_delta: "{\"calls\":[]}".into(),
        },
        UiChunk::TextStart { id: "t".into() },
        UiChunk::TextDelta {
            id: "t".into(),
            delta: "waiting".into(),
        },
        UiChunk::TextEnd { id: "t".into() },
        UiChunk::ToolInputAvailable {
            tool_call_id: "c1".into(),
            tool_name: "hub_call".into(),
            input: json!({"calls": []}),
            provider_metadata: None,
        },
        UiChunk::ToolOutputAvailable {
            tool_call_id: "c1".into(),
            output: json!([{"ok": true}]),
            preliminary: None,
        },
        UiChunk::ToolInputError {
            tool_call_id: "c2".into(),
            tool_name: "hub_list".into(),
            input: json!("{bad"),
            error_text: "not JSON".into(),
        },
        UiChunk::FinishStep,
        UiChunk::Finish {
            finish_reason: Some(FinishReason::ToolCalls),
            message_metadata: Some(
                json!({"finishReason": "max-steps", "usage": {"inputTokens": 9, "outputTokens": 3, "totalTokens": 12}}),
            ),
        },
    ];
    let events = encode(ToolMode::Hub, &chunks);
    let message = collect(&events).unwrap();
    assert_eq!(
        message["content"],
        json!([
            {"type": "mcp_tool_use", "id": "c1", "name": "hub_call", "server_name": "wasmhub", "input": {"calls": []}},
            {"type": "text", "text": "waiting"},
            {"type": "mcp_tool_result", "tool_use_id": "c1", "is_error": false, "content": [{"type": "text", "text": "[{\"ok\":true}]"}]},
            {"type": "mcp_tool_use", "id": "c2", "name": "hub_list", "server_name": "wasmhub", "input": {}},
            {"type": "mcp_tool_result", "tool_use_id": "c2", "is_error": true, "content": [{"type": "text", "text": "not JSON"}]}
        ])
    );
    assert_eq!(message["stop_reason"], "pause_turn");
    assert_eq!(message["usage"], json!({"input_tokens": 9, "output_tokens": 3}));
    // The text waited for the tool call before it: no delta of a later block came
    // before the earlier one stopped.
    let order = names(&events);
    let stop0 = order.iter().position(|n| n == "content_block_stop#0").unwrap();
    let start1 = order.iter().position(|n| n == "content_block_start#1").unwrap();
    assert!(stop0 < start1, "{order:?}");
}

#[test]
fn stop_reasons_and_usage_follow_anthropics_names() {
    use FinishReason as F;
    assert_eq!(stop_reason(ToolMode::Client, Some(F::Stop), None), "end_turn");
    assert_eq!(
        stop_reason(ToolMode::Client, Some(F::ToolCalls), None),
        "tool_use"
    );
    assert_eq!(
        stop_reason(ToolMode::Hub, Some(F::ToolCalls), Some("approval-requested")),
        "end_turn"
    );
    assert_eq!(
        stop_reason(ToolMode::Hub, Some(F::ToolCalls), Some("max-steps")),
        "pause_turn"
    );
    assert_eq!(
        stop_reason(ToolMode::Client, Some(F::ContentFilter), None),
        "refusal"
    );
    assert_eq!(stop_reason(ToolMode::Client, None, None), "end_turn");
    let u = Usage {
        input_tokens: 3,
        output_tokens: 4,
        total_tokens: 7,
        reasoning_tokens: None,
        cached_input_tokens: None,
    };
    assert_eq!(
        anthropic_usage(&u),
        json!({"input_tokens": 3, "output_tokens": 4})
    );
}
