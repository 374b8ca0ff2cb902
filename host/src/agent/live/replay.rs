//! The chunks that rebuild a turn's message on a client that joins once the turn's
//! early chunks are gone (`agent.resume_buffer_kb`): synthesized from the message
//! state the turn keeps anyway, so a long turn resumes without its whole stream.
//!
//! The replay is what the AI SDK client needs to reach the same message
//! (`processUIMessageStream`): a `start` with the metadata, then every part the
//! turn added, closed ones whole and still-open ones left open under the stream
//! ids the live chunks keep using. Parts the message had before the turn (a turn
//! continuing after an approval) are already on the client; only their changes
//! since are sent (a tool call that got its output). Transient data parts are not
//! part of any message and are not replayed.

use super::super::message::{Part, TextState, ToolPart, ToolState, UiMessage};
use crate::llm::UiChunk;
use serde_json::Value;
use std::collections::HashMap;

/// What the message looked like when the turn began.
#[derive(Debug, Default)]
pub(super) struct Baseline {
    /// How many parts it had.
    parts: usize,
    /// The state of each of its tool calls, by call id.
    tools: HashMap<String, ToolState>,
}

impl Baseline {
    pub(super) fn of(message: &UiMessage) -> Baseline {
        let tools = message
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Tool(t) => Some((t.tool_call_id.clone(), t.state)),
                _ => None,
            })
            .collect();
        Baseline {
            parts: message.parts.len(),
            tools,
        }
    }
}

/// What a replay is made from, besides the message.
pub(super) struct ReplayState<'a> {
    /// Stream id of each text or reasoning part still open -> its index.
    pub open: &'a HashMap<String, usize>,
    /// The input text streamed so far of each tool call whose input is streaming.
    pub inputs: &'a HashMap<String, String>,
    /// The message before the turn.
    pub baseline: &'a Baseline,
    /// The turn's `error`, `abort` and `finish` chunks, in order.
    pub ending: &'a [UiChunk],
}

/// The chunks that take a client from the message before the turn to `message`.
pub(super) fn replay(message: &UiMessage, state: &ReplayState<'_>) -> Vec<UiChunk> {
    let mut out = vec![UiChunk::Start {
        message_id: Some(message.id.clone()),
        message_metadata: message.metadata.clone(),
    }];
    let split = state.baseline.parts.min(message.parts.len());
    for part in &message.parts[..split] {
        if let Part::Tool(t) = part
            && state.baseline.tools.get(&t.tool_call_id) != Some(&t.state)
        {
            out.extend(outcome(t));
        }
    }
    let ids: HashMap<usize, &str> = state.open.iter().map(|(id, &i)| (i, id.as_str())).collect();
    let mut in_step = false;
    for (i, part) in message.parts.iter().enumerate().skip(split) {
        match part {
            Part::StepStart => {
                if in_step {
                    out.push(UiChunk::FinishStep);
                }
                in_step = true;
                out.push(UiChunk::StartStep);
            }
            Part::Text { text, state: s } | Part::Reasoning { text, state: s } => {
                let reasoning = matches!(part, Part::Reasoning { .. });
                let open = ids.get(&i).copied();
                let id = open.map_or_else(|| format!("replay-{i}"), str::to_string);
                let closed = open.is_none() && *s != Some(TextState::Streaming);
                out.extend(text_chunks(reasoning, &id, text, closed));
            }
            Part::Tool(t) => out.extend(tool_chunks(t, state.inputs)),
            Part::Other(v) => out.extend(other_chunk(v)),
        }
    }
    out.extend(state.ending.iter().cloned());
    out
}

/// A text or reasoning part: start, its text so far, and its end when closed.
fn text_chunks(reasoning: bool, id: &str, text: &str, closed: bool) -> Vec<UiChunk> {
    let id = crate::llm::Text::from(id);
    let mut out = Vec::with_capacity(3);
    out.push(if reasoning {
        UiChunk::ReasoningStart {
            id: id.clone(),
            provider_metadata: None,
        }
    } else {
        UiChunk::TextStart { id: id.clone() }
    });
    if !text.is_empty() {
        let delta = crate::llm::Text::from(text);
        out.push(if reasoning {
            UiChunk::ReasoningDelta {
                id: id.clone(),
                delta,
            }
        } else {
            UiChunk::TextDelta {
                id: id.clone(),
                delta,
            }
        });
    }
    if closed {
        out.push(if reasoning {
            UiChunk::ReasoningEnd {
                id,
                provider_metadata: None,
            }
        } else {
            UiChunk::TextEnd { id }
        });
    }
    out
}

/// A tool call the turn made, from its start to where it is now.
fn tool_chunks(t: &ToolPart, inputs: &HashMap<String, String>) -> Vec<UiChunk> {
    let mut out = vec![UiChunk::ToolInputStart {
        tool_call_id: t.tool_call_id.as_str().into(),
        tool_name: t.tool_name.clone(),
        dynamic: t.dynamic.then_some(true),
        title: None,
    }];
    match (t.state, &t.raw_input) {
        (ToolState::InputStreaming, _) => {
            if let Some(text) = inputs.get(&t.tool_call_id).filter(|s| !s.is_empty()) {
                out.push(UiChunk::ToolInputDelta {
                    tool_call_id: t.tool_call_id.as_str().into(),
                    input_text_delta: text.as_str().into(),
                });
            }
        }
        (ToolState::OutputError, Some(raw)) => out.push(UiChunk::ToolInputError {
            tool_call_id: t.tool_call_id.clone(),
            tool_name: t.tool_name.clone(),
            input: raw.clone(),
            error_text: t.error_text.clone().unwrap_or_default(),
        }),
        _ => {
            out.push(UiChunk::ToolInputAvailable {
                tool_call_id: t.tool_call_id.clone(),
                tool_name: t.tool_name.clone(),
                input: t.input.clone().unwrap_or(Value::Null),
                provider_metadata: t.call_provider_metadata.clone(),
            });
            if t.state == ToolState::OutputDenied {
                out.extend(approval_request(t));
            }
            out.extend(outcome(t));
        }
    }
    out
}

/// The chunk that moved a call whose input is complete to its current state.
fn outcome(t: &ToolPart) -> Option<UiChunk> {
    let tool_call_id = t.tool_call_id.clone();
    match t.state {
        ToolState::OutputAvailable => Some(UiChunk::ToolOutputAvailable {
            tool_call_id,
            output: t.output.clone().unwrap_or(Value::Null),
            preliminary: None,
        }),
        ToolState::OutputError => Some(UiChunk::ToolOutputError {
            tool_call_id,
            error_text: t.error_text.clone().unwrap_or_default(),
        }),
        ToolState::OutputDenied => Some(UiChunk::ToolOutputDenied { tool_call_id }),
        ToolState::ApprovalRequested => approval_request(t),
        ToolState::InputStreaming | ToolState::InputAvailable | ToolState::ApprovalResponded => None,
    }
}

fn approval_request(t: &ToolPart) -> Option<UiChunk> {
    let approval = t.approval.as_ref()?;
    Some(UiChunk::ToolApprovalRequest {
        approval_id: approval.id.clone(),
        tool_call_id: t.tool_call_id.clone(),
        reason: approval
            .extra
            .get("requestReason")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// A source, file or data part, as the chunk that made it.
fn other_chunk(v: &Value) -> Option<UiChunk> {
    let ty = v["type"].as_str()?;
    let string = |key: &str| v[key].as_str().map(str::to_string);
    match ty {
        "source-url" => Some(UiChunk::SourceUrl {
            source_id: string("sourceId")?,
            url: string("url")?,
            title: string("title"),
        }),
        "file" => Some(UiChunk::File {
            url: string("url")?,
            media_type: string("mediaType")?,
        }),
        _ => Some(UiChunk::Data {
            name: ty.strip_prefix("data-")?.to_string(),
            id: string("id"),
            data: v["data"].clone(),
            transient: None,
        }),
    }
}
