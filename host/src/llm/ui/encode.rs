//! A UI chunk as an SSE `data:` frame: the same bytes as `sse::write_json`, with
//! the delta chunks (nearly every chunk of a stream) written directly instead of
//! through serde's internally tagged enum path, which was a sixth of the
//! transformer benchmark's time.

use super::UiChunk;
use crate::sse;

impl UiChunk {
    /// Appends `data: <compact JSON>\n\n` for this chunk, byte for byte what
    /// [`sse::write_json`] writes for it.
    pub fn write_sse(&self, buf: &mut Vec<u8>) {
        let (head, first, second_key, second) = match self {
            UiChunk::TextDelta { id, delta } => (
                &br#"data: {"type":"text-delta","id":"#[..],
                id,
                &br#","delta":"#[..],
                delta,
            ),
            UiChunk::ReasoningDelta { id, delta } => (
                &br#"data: {"type":"reasoning-delta","id":"#[..],
                id,
                &br#","delta":"#[..],
                delta,
            ),
            UiChunk::ToolInputDelta {
                tool_call_id,
                input_text_delta,
            } => (
                &br#"data: {"type":"tool-input-delta","toolCallId":"#[..],
                tool_call_id,
                &br#","inputTextDelta":"#[..],
                input_text_delta,
            ),
            other => return sse::write_json(buf, other),
        };
        buf.extend_from_slice(head);
        string(buf, first);
        buf.extend_from_slice(second_key);
        string(buf, second);
        buf.extend_from_slice(b"}\n\n");
    }
}

/// A JSON string, escaped as serde_json escapes it.
fn string(buf: &mut Vec<u8>, s: &str) {
    serde_json::to_writer(&mut *buf, s).expect("writing to a Vec cannot fail");
}
