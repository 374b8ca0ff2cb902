//! Unstreamed answers translated whole: read to the end (bounded), then written
//! as one OpenAI `chat.completion` object, as the chunks a streamed call would
//! have given (the per-provider `stream = false` switch: a caller that asked for
//! a stream gets one), or, for an error answer of a non-OpenAI provider, as an
//! OpenAI error body.

use super::error_body;
use crate::llm::client::{Recode, ResponseBodyError};
use crate::llm::upstream;
use crate::sse;
use serde_json::{Map, Value, json};

/// A native whole answer as the OpenAI `chat.completion` (lenient: what is
/// missing is left out; an error answer becomes `{"error": {...}}`).
pub(crate) type ToCompletion = fn(Value) -> Value;

/// What a [`Whole`] writes once the answer is read.
#[derive(Clone, Copy)]
enum Output {
    /// The `chat.completion` object.
    Json(ToCompletion),
    /// Its chunks, then `[DONE]`.
    Stream(ToCompletion),
    /// An OpenAI error body with the answer's message.
    Error,
}

/// An unstreamed answer read whole, then translated (see the module docs).
pub(crate) struct Whole {
    buf: Vec<u8>,
    limit: usize,
    output: Output,
}

impl Whole {
    /// Writes the answer as a `chat.completion` made by `map`.
    pub(crate) fn json(limit: usize, map: ToCompletion) -> Whole {
        Whole::new(limit, Output::Json(map))
    }

    /// Writes the answer's `chat.completion` (made by `map`) as chunks.
    pub(crate) fn stream(limit: usize, map: ToCompletion) -> Whole {
        Whole::new(limit, Output::Stream(map))
    }

    /// Writes an error answer as an OpenAI error body.
    pub(crate) fn errors(limit: usize) -> Whole {
        Whole::new(limit, Output::Error)
    }

    fn new(limit: usize, output: Output) -> Whole {
        Whole {
            buf: Vec::new(),
            limit,
            output,
        }
    }
}

impl Recode for Whole {
    fn feed(&mut self, bytes: &[u8], _out: &mut Vec<u8>) -> Result<(), ResponseBodyError> {
        if self.buf.len() + bytes.len() > self.limit {
            return Err(ResponseBodyError::TooLarge(self.limit));
        }
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), ResponseBodyError> {
        let buf = std::mem::take(&mut self.buf);
        match self.output {
            Output::Error => {
                let message = upstream::error_message(&buf);
                serde_json::to_writer(&mut *out, &error_body(&message)).expect("writing to a Vec");
            }
            // An answer that is cut or not JSON goes on as it came, for the
            // caller to judge like any other (`llm::terminal::whole_answer`).
            Output::Json(map) => match serde_json::from_slice::<Value>(&buf) {
                Ok(v) => serde_json::to_writer(&mut *out, &map(v)).expect("writing to a Vec"),
                Err(_) => out.extend_from_slice(&buf),
            },
            Output::Stream(map) => match serde_json::from_slice::<Value>(&buf) {
                Ok(v) => write_chunks(out, &map(v)),
                // Cut: the stream ends without `[DONE]`, which reads as cut.
                Err(e) if e.classify() == serde_json::error::Category::Eof => {}
                Err(e) => sse::write_json(out, &error_body(&format!("the upstream answer is not JSON: {e}"))),
            },
        }
        Ok(())
    }
}

/// `completion` (a `chat.completion`, or an error body) as the chunks of a
/// streamed answer: the message in one delta, the finish reason, the usage, then
/// `[DONE]`; an error body as one error frame.
pub(crate) fn write_chunks(out: &mut Vec<u8>, completion: &Value) {
    if let Some(error) = completion.get("error").filter(|e| !e.is_null()) {
        sse::write_json(out, &json!({ "error": error }));
        return;
    }
    let chunk = |choices: Value| {
        json!({"id": completion["id"], "object": "chat.completion.chunk", "created": completion["created"],
               "model": completion["model"], "choices": choices})
    };
    let choice = completion.pointer("/choices/0").unwrap_or(&Value::Null);
    let message = &choice["message"];
    let mut delta = Map::new();
    delta.insert("role".into(), json!("assistant"));
    for key in ["content", "reasoning_content", "reasoning", "refusal"] {
        if let Some(text) = message.get(key).filter(|v| v.is_string()) {
            delta.insert(key.into(), text.clone());
        }
    }
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        let calls = calls.iter().enumerate().map(|(i, call)| {
            let mut call = call.clone();
            call["index"] = json!(i);
            call
        });
        delta.insert("tool_calls".into(), Value::Array(calls.collect()));
    }
    sse::write_json(
        out,
        &chunk(json!([{"index": 0, "delta": delta, "finish_reason": null}])),
    );
    let reason = choice
        .get("finish_reason")
        .filter(|r| r.is_string())
        .cloned()
        .unwrap_or(json!("stop"));
    sse::write_json(
        out,
        &chunk(json!([{"index": 0, "delta": {}, "finish_reason": reason}])),
    );
    if let Some(usage) = completion.get("usage").filter(|u| u.is_object()) {
        let mut last = chunk(json!([]));
        last["usage"] = usage.clone();
        sse::write_json(out, &last);
    }
    out.extend_from_slice(sse::DONE);
}
