//! What the OpenAI proxy tests share: a hub in front of a scripted upstream, a chat
//! request body, and a strict reading of UI message streams.

use crate::support::client;
use crate::support::hub::{self, Hub};
use crate::support::upstream::Upstream;
use serde_json::{Value, json};
use std::time::Duration;
use wasmhub::llm::{FinishReason, UiChunk};

pub const WITHIN: Duration = Duration::from_secs(20);

pub async fn setup(extra: &str) -> (Upstream, Hub) {
    let up = Upstream::start().await;
    let hub = hub::start(vec![hub::provider("up", &up.base_url(), &["gpt-*"], extra)]).await;
    (up, hub)
}

/// The SSE events of a streamed [`chat_body`] POSTed to `path`, read to the end.
pub async fn streamed(hub: &Hub, path: &str) -> Vec<String> {
    client::post(hub.addr, path, &chat_body(true))
        .await
        .events(WITHIN)
        .await
        .0
}

pub fn chat_body(stream: bool) -> Value {
    json!({"model": "up/gpt-test", "messages": [{"role": "user", "content": "hi"}], "stream": stream,
           "x_unknown": {"kept": [1, 2]}, "temperature": 0.5})
}

/// Parses UI chunks as strictly as the AI SDK does and checks the stream's grammar:
/// `start` first, every delta inside its start/end, `finish` last, then `[DONE]`.
pub fn ui_chunks(events: &[String]) -> Vec<UiChunk> {
    assert_eq!(
        events.last().map(String::as_str),
        Some("[DONE]"),
        "a UI stream ends with [DONE]"
    );
    let chunks: Vec<UiChunk> = events[..events.len() - 1]
        .iter()
        .map(|e| {
            serde_json::from_str(e).unwrap_or_else(|err| panic!("a chunk the client rejects ({err}): {e}"))
        })
        .collect();
    assert!(
        matches!(chunks.first(), Some(UiChunk::Start { .. })),
        "{:?}",
        chunks.first()
    );
    assert!(
        matches!(chunks.last(), Some(UiChunk::Finish { .. })),
        "{:?}",
        chunks.last()
    );
    let mut open = std::collections::HashSet::new();
    let mut tools = std::collections::HashSet::new();
    for c in &chunks {
        match c {
            UiChunk::TextStart { id } | UiChunk::ReasoningStart { id, .. } => {
                assert!(open.insert(id.clone()), "reopened {id}")
            }
            UiChunk::TextDelta { id, .. } | UiChunk::ReasoningDelta { id, .. } => {
                assert!(open.contains(id), "{id} not open")
            }
            UiChunk::TextEnd { id } | UiChunk::ReasoningEnd { id, .. } => {
                assert!(open.remove(id), "{id} not open")
            }
            UiChunk::ToolInputStart { tool_call_id, .. } => assert!(tools.insert(tool_call_id.to_string())),
            UiChunk::ToolInputDelta { tool_call_id, .. } => {
                assert!(
                    tools.contains(tool_call_id.as_str()),
                    "{tool_call_id} not started"
                )
            }
            UiChunk::ToolInputAvailable { tool_call_id, .. }
            | UiChunk::ToolInputError { tool_call_id, .. } => {
                assert!(tools.contains(tool_call_id), "{tool_call_id} not started")
            }
            _ => {}
        }
    }
    assert!(open.is_empty(), "parts left open: {open:?}");
    chunks
}

pub fn text_of(chunks: &[UiChunk]) -> (String, String) {
    let (mut text, mut reasoning) = (String::new(), String::new());
    for c in chunks {
        match c {
            UiChunk::TextDelta { delta, .. } => text.push_str(delta),
            UiChunk::ReasoningDelta { delta, .. } => reasoning.push_str(delta),
            _ => {}
        }
    }
    (text, reasoning)
}

pub fn finish_reason(chunks: &[UiChunk]) -> Option<FinishReason> {
    chunks.iter().find_map(|c| match c {
        UiChunk::Finish { finish_reason, .. } => *finish_reason,
        _ => None,
    })
}

/// The output of the first tool call that has one.
pub fn tool_output(chunks: &[UiChunk]) -> Option<&Value> {
    chunks.iter().find_map(|c| match c {
        UiChunk::ToolOutputAvailable { output, .. } => Some(output),
        _ => None,
    })
}

pub fn error_text(chunks: &[UiChunk]) -> Option<&str> {
    chunks.iter().find_map(|c| match c {
        UiChunk::Error { error_text } => Some(error_text.as_str()),
        _ => None,
    })
}

/// The text of a relayed OpenAI chunk stream, checking it ends with `[DONE]`.
pub fn openai_text(events: &[String]) -> String {
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"), "{events:?}");
    let chunks = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str::<Value>(e).unwrap());
    chunks
        .filter_map(|c| {
            c.pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}

/// A hub with the providers `(name, base_url, extra settings)` and the model
/// `smart`, a chain of `targets`.
pub async fn smart_chain(providers: &[(&str, &str, &str)], targets: &[&str]) -> Hub {
    let config = wasmhub::config::Config {
        providers: providers
            .iter()
            .map(|(name, url, extra)| hub::provider(name, url, &[], extra))
            .collect(),
        models: vec![wasmhub::toml::from_str(&format!("name = \"smart\"\ntargets = {targets:?}\n")).unwrap()],
        ..wasmhub::config::Config::default()
    };
    hub::start_with(config).await
}
