//! Round trips of every chunk type and the strictness of reading them back.

use super::*;
use serde_json::json;

#[test]
fn every_variant_round_trips_with_the_documented_keys() {
    let cases = vec![
        (
            UiChunk::Start {
                message_id: None,
                message_metadata: None,
            },
            json!({"type": "start"}),
        ),
        (
            UiChunk::Start {
                message_id: Some("m1".into()),
                message_metadata: Some(json!({"a": 1})),
            },
            json!({"type": "start", "messageId": "m1", "messageMetadata": {"a": 1}}),
        ),
        (UiChunk::StartStep, json!({"type": "start-step"})),
        (UiChunk::FinishStep, json!({"type": "finish-step"})),
        (
            UiChunk::TextStart { id: "t".into() },
            json!({"type": "text-start", "id": "t"}),
        ),
        (
            UiChunk::TextDelta {
                id: "t".into(),
                delta: "hi".into(),
            },
            json!({"type": "text-delta", "id": "t", "delta": "hi"}),
        ),
        (
            UiChunk::TextEnd { id: "t".into() },
            json!({"type": "text-end", "id": "t"}),
        ),
        (
            UiChunk::ReasoningStart {
                id: "r".into(),
                provider_metadata: None,
            },
            json!({"type": "reasoning-start", "id": "r"}),
        ),
        (
            UiChunk::ReasoningDelta {
                id: "r".into(),
                delta: "x".into(),
            },
            json!({"type": "reasoning-delta", "id": "r", "delta": "x"}),
        ),
        (
            UiChunk::ReasoningEnd {
                id: "r".into(),
                provider_metadata: None,
            },
            json!({"type": "reasoning-end", "id": "r"}),
        ),
        (
            UiChunk::ToolInputStart {
                tool_call_id: "c".into(),
                tool_name: "hub_list".into(),
                dynamic: None,
                title: None,
            },
            json!({"type": "tool-input-start", "toolCallId": "c", "toolName": "hub_list"}),
        ),
        (
            UiChunk::ToolInputStart {
                tool_call_id: "c".into(),
                tool_name: "x".into(),
                dynamic: Some(true),
                title: Some("T".into()),
            },
            json!({"type": "tool-input-start", "toolCallId": "c", "toolName": "x", "dynamic": true, "title": "T"}),
        ),
        (
            UiChunk::ToolInputDelta {
                tool_call_id: "c".into(),
                input_text_delta: "{".into(),
            },
            json!({"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": "{"}),
        ),
        (
            UiChunk::ToolInputAvailable {
                tool_call_id: "c".into(),
                tool_name: "w".into(),
                input: json!({"q": 1}),
                provider_metadata: None,
            },
            json!({"type": "tool-input-available", "toolCallId": "c", "toolName": "w", "input": {"q": 1}}),
        ),
        (
            UiChunk::ToolInputError {
                tool_call_id: "c".into(),
                tool_name: "w".into(),
                input: json!("{bad"),
                error_text: "e".into(),
            },
            json!({"type": "tool-input-error", "toolCallId": "c", "toolName": "w", "input": "{bad", "errorText": "e"}),
        ),
        (
            UiChunk::ToolOutputAvailable {
                tool_call_id: "c".into(),
                output: json!([1]),
                preliminary: None,
            },
            json!({"type": "tool-output-available", "toolCallId": "c", "output": [1]}),
        ),
        (
            UiChunk::ToolOutputError {
                tool_call_id: "c".into(),
                error_text: "no".into(),
            },
            json!({"type": "tool-output-error", "toolCallId": "c", "errorText": "no"}),
        ),
        (
            UiChunk::SourceUrl {
                source_id: "s".into(),
                url: "https://x".into(),
                title: None,
            },
            json!({"type": "source-url", "sourceId": "s", "url": "https://x"}),
        ),
        (
            UiChunk::File {
                url: "data:,".into(),
                media_type: "text/plain".into(),
            },
            json!({"type": "file", "url": "data:,", "mediaType": "text/plain"}),
        ),
        (
            UiChunk::Data {
                name: "call".into(),
                id: Some("d".into()),
                data: json!({"k": 2}),
                transient: Some(true),
            },
            json!({"type": "data-call", "id": "d", "data": {"k": 2}, "transient": true}),
        ),
        (
            UiChunk::MessageMetadata {
                message_metadata: json!({"usage": {}}),
            },
            json!({"type": "message-metadata", "messageMetadata": {"usage": {}}}),
        ),
        (
            UiChunk::Finish {
                finish_reason: Some(FinishReason::ContentFilter),
                message_metadata: None,
            },
            json!({"type": "finish", "finishReason": "content-filter"}),
        ),
        (
            UiChunk::Finish {
                finish_reason: None,
                message_metadata: None,
            },
            json!({"type": "finish"}),
        ),
        (
            UiChunk::Error {
                error_text: "boom".into(),
            },
            json!({"type": "error", "errorText": "boom"}),
        ),
        (UiChunk::Abort { reason: None }, json!({"type": "abort"})),
        (
            UiChunk::ToolApprovalRequest {
                approval_id: "apr_1".into(),
                tool_call_id: "c".into(),
                reason: None,
            },
            json!({"type": "tool-approval-request", "approvalId": "apr_1", "toolCallId": "c"}),
        ),
        (
            UiChunk::ToolApprovalRequest {
                approval_id: "apr_1".into(),
                tool_call_id: "c".into(),
                reason: Some("x.wipe is destructive".into()),
            },
            json!({"type": "tool-approval-request", "approvalId": "apr_1", "toolCallId": "c", "reason": "x.wipe is destructive"}),
        ),
        (
            UiChunk::ToolOutputDenied {
                tool_call_id: "c".into(),
            },
            json!({"type": "tool-output-denied", "toolCallId": "c"}),
        ),
    ];
    for (chunk, wire) in cases {
        assert_same_sse(&chunk);
        assert_eq!(serde_json::to_value(&chunk).unwrap(), wire);
        assert_eq!(wire["type"], chunk.type_name().as_ref());
        assert_eq!(serde_json::from_value::<UiChunk>(wire).unwrap(), chunk);
    }
}

#[test]
fn parsing_is_as_strict_as_the_client() {
    for bad in [
        json!({"type": "text-delta", "id": "t"}),
        json!({"type": "text-start", "id": "t", "extra": 1}),
        json!({"type": "start-step", "extra": 1}),
        json!({"type": "data-x", "data": 1, "extra": 1}),
        json!({"type": "data-x"}),
        json!({"type": "tool-call"}),
        json!({"type": "finish", "finishReason": "max-steps"}),
        json!({"type": "tool-input-start", "toolCallId": "c", "toolName": "x", "dynamic": "yes"}),
    ] {
        assert!(serde_json::from_value::<UiChunk>(bad.clone()).is_err(), "{bad}");
    }
}

#[test]
fn openai_finish_reasons_map_to_ui_values() {
    for (openai, ui) in [
        ("stop", "stop"),
        ("length", "length"),
        ("content_filter", "content-filter"),
        ("tool_calls", "tool-calls"),
        ("function_call", "tool-calls"),
        ("eos", "other"),
    ] {
        assert_eq!(
            serde_json::to_value(FinishReason::from_openai(openai)).unwrap(),
            ui
        );
    }
}

/// `write_sse` writes what `sse::write_json` writes.
fn assert_same_sse(chunk: &UiChunk) {
    let (mut direct, mut serde) = (Vec::new(), Vec::new());
    chunk.write_sse(&mut direct);
    crate::sse::write_json(&mut serde, chunk);
    assert_eq!(
        String::from_utf8(direct).unwrap(),
        String::from_utf8(serde).unwrap()
    );
}

#[test]
fn delta_chunks_are_written_directly_with_serdes_escaping() {
    let text = "a\"b\\c\n\r\t\u{1}\u{1f}\u{7f} é 😀 </script>";
    // Every ASCII byte, alone and in runs longer than the eight-byte search step.
    let ascii: String = (0..128u8).map(char::from).collect();
    for one in ascii.chars().map(String::from).chain([ascii.repeat(3)]) {
        assert_same_sse(&UiChunk::TextDelta {
            id: "t".into(),
            delta: one.into(),
        });
    }
    for chunk in [
        UiChunk::TextDelta {
            id: "text-0-0".into(),
            delta: text.into(),
        },
        UiChunk::ReasoningDelta {
            id: text.into(),
            delta: "".into(),
        },
        UiChunk::ToolInputDelta {
            tool_call_id: "call_\"1".into(),
            input_text_delta: "{\"a\": [1, \"\\u0041\"]}".into(),
        },
        UiChunk::Error {
            error_text: text.into(),
        },
    ] {
        assert_same_sse(&chunk);
    }
}
