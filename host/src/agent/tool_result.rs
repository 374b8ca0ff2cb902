//! A tool call's result as the chunk that answers it, within the context budget.

use super::context_guard::Budget;
use super::convert::error_json;
use crate::hub::accounting::ContextGuard;
use crate::llm::UiChunk;
use serde_json::Value;

/// The result of one tool call, ready to be sent and recorded.
pub(crate) enum ToolResult {
    Output(Value),
    Error(String),
}

/// The chunk that answers a tool call: its output if the context budget admits
/// it, else an error (the guard's event goes to `on_guard`); an error result counts
/// against the budget too.
pub(crate) fn result_chunk(
    id: String,
    result: ToolResult,
    budget: &mut Budget,
    on_guard: impl FnOnce(&ContextGuard),
) -> UiChunk {
    match result {
        ToolResult::Output(output) => {
            let text = match &output {
                Value::String(s) => s.clone(),
                v => v.to_string(),
            };
            match budget.admit(&text) {
                Ok(()) => UiChunk::ToolOutputAvailable {
                    tool_call_id: id,
                    output,
                    preliminary: None,
                },
                Err(too_large) => {
                    on_guard(&too_large.event);
                    UiChunk::ToolOutputError {
                        tool_call_id: id,
                        error_text: too_large.message(),
                    }
                }
            }
        }
        ToolResult::Error(message) => {
            let _ = budget.admit(&error_json(&message));
            UiChunk::ToolOutputError {
                tool_call_id: id,
                error_text: message,
            }
        }
    }
}
