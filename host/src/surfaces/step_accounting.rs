//! Accounting of the model calls a surface makes for a client outside the agent
//! loop (the OpenAI-compatible proxy, the Anthropic surface's client-tools mode):
//! one `hub::accounting` model-step record per call, with the target that answered.
//! When the provider reports no usage, the hub counts the request and the answer
//! (`agent::counted`) and the record's `tokenizer` says what counted; this module
//! reads the answer's text from OpenAI chunks and completions.

use super::App;
use crate::agent::Counter;
use crate::agent::counted;
use crate::hub::Caller;
use crate::hub::accounting::{Accounting, Entry, ModelStep};
use crate::llm::openai::ChatChunk;
use crate::llm::tokenizer::Tokenizers;
use crate::llm::{Route, Usage};
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

/// One model call a surface sends for a client, on its way to accounting.
pub(crate) struct StepAccounting {
    accounting: Arc<Accounting>,
    tokenizers: Arc<Tokenizers>,
    caller: String,
    client: Option<String>,
    started: Instant,
}

impl StepAccounting {
    pub(crate) fn start(app: &App, caller: &Caller) -> StepAccounting {
        StepAccounting {
            accounting: app.hub.accounting().clone(),
            tokenizers: app.agent.tokenizers().clone(),
            caller: caller.name().to_string(),
            client: caller.client().map(str::to_string),
            started: Instant::now(),
        }
    }

    /// Records the call `route` answered, with the usage the provider reported; when
    /// it reported none, with `request`'s and `output()`'s tokens as the hub counts
    /// them (`output` is only called then).
    pub(crate) fn done(
        self,
        route: &Route,
        usage: Option<Usage>,
        request: &Value,
        output: impl FnOnce() -> String,
    ) {
        let latency = self.started.elapsed();
        let provider = &route.provider.config.name;
        let step = ModelStep::measured(provider, &route.model, usage, latency);
        let counter = || Counter::of(route, &self.tokenizers);
        let step = counted::fill_in(step, counter, request, output);
        let client = self.client.as_deref();
        self.accounting
            .account(None, &self.caller, client, None, Entry::ModelStep(step));
    }
}

/// What a streamed chunk adds to the answer (its first choice, the one a proxied
/// answer is read by): text, reasoning, refusals, tool names and arguments.
pub(crate) fn chunk_output(chunk: &ChatChunk<'_>, out: &mut String) {
    if let Some(delta) = chunk.choice.as_ref().and_then(|c| c.delta.as_ref()) {
        let parts = [
            &delta.content,
            &delta.reasoning_content,
            &delta.reasoning,
            &delta.refusal,
        ];
        for text in parts.into_iter().flatten() {
            out.push_str(&text.0);
        }
        for call in delta.tool_calls.iter().flatten() {
            if let Some(f) = &call.function {
                for part in [&f.name, &f.arguments].into_iter().flatten() {
                    out.push_str(&part.0);
                }
            }
        }
    }
}

/// The answer of a non-streamed OpenAI completion: its first choice's message
/// content, reasoning, refusal, tool names and arguments.
pub(crate) fn answer_output(bytes: &[u8]) -> String {
    let mut out = String::new();
    let Ok(answer) = serde_json::from_slice::<Value>(bytes) else {
        return out;
    };
    if let Some(message) = answer["choices"].get(0).map(|c| &c["message"]) {
        for key in ["content", "reasoning_content", "reasoning", "refusal"] {
            out.push_str(message[key].as_str().unwrap_or_default());
        }
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            for key in ["name", "arguments"] {
                out.push_str(call["function"][key].as_str().unwrap_or_default());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_read_from_chunks_and_whole_completions() {
        let mut out = String::new();
        for frame in [
            json!({"choices": [{"delta": {"reasoning_content": "think "}}]}),
            json!({"choices": [{"delta": {"content": "Hi"}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{\"a\""}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": ":1}"}}]}}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}),
        ] {
            let text = frame.to_string();
            chunk_output(&ChatChunk::parse(&text).unwrap(), &mut out);
        }
        assert_eq!(out, "think Hif{\"a\":1}");
        let whole = json!({"choices": [
            {"message": {"content": "Yes", "tool_calls": [{"function": {"name": "g", "arguments": "{}"}}]}},
            {"message": {"content": "second choice, not counted"}},
        ]});
        assert_eq!(answer_output(whole.to_string().as_bytes()), "Yesg{}");
        assert_eq!(answer_output(b"not json"), "");
    }
}
