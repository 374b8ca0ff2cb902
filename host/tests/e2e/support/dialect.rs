//! Scripted upstreams that speak a provider kind's own wire format, shared by
//! the `llm_anthropic`, `llm_gemini` and `llm_ollama` tests: the hub in front of
//! one provider of the kind (its key in the environment), the kind's stream
//! framing (Anthropic's typed events, Gemini's data-only events, Ollama's
//! NDJSON), its error body, and Ollama's answer lines the fallback chains end on.
//! The shapes are the providers' published examples (see each test file).

use crate::support::hub::{self, Hub};
use crate::support::upstream::{Frame, Reply, Upstream};
use serde_json::{Value, json};

/// A provider kind's dialect.
#[derive(Debug, Clone, Copy)]
pub enum Dialect {
    Anthropic,
    Gemini,
    Ollama,
}

/// One scripted provider of a [`Dialect`]: its name in the hub, the model
/// patterns it serves, and its API key's environment variable and value.
pub struct Scripted {
    pub dialect: Dialect,
    pub name: &'static str,
    pub models: &'static [&'static str],
    pub key: Option<(&'static str, &'static str)>,
}

impl Dialect {
    /// The `kind` in `[[providers]]`.
    pub fn kind(self) -> &'static str {
        match self {
            Dialect::Anthropic => "anthropic",
            Dialect::Gemini => "gemini",
            Dialect::Ollama => "ollama",
        }
    }

    /// A `200` stream of `events` framed as this kind streams them.
    pub fn stream(self, events: &[Value]) -> Reply {
        match self {
            Dialect::Anthropic => Reply::typed_events(events),
            Dialect::Gemini => Reply::sse(events.iter().map(|e| Frame::Data(e.to_string())).collect()),
            Dialect::Ollama => Reply::ndjson(events),
        }
    }

    /// This kind's error body (`kind` is Anthropic's error type, Gemini's
    /// status; Ollama's has only the message) with `status`.
    pub fn error(self, status: u16, kind: &str, message: &str) -> Reply {
        let body = match self {
            Dialect::Anthropic => json!({"type": "error", "error": {"type": kind, "message": message}}),
            Dialect::Gemini => json!({"error": {"code": status, "message": message, "status": kind}}),
            Dialect::Ollama => json!({ "error": message }),
        };
        Reply::json(status, body)
    }
}

impl Scripted {
    /// The `[[providers]]` settings of this provider after `base_url`/`models`:
    /// its kind and key variable, then `extra`.
    pub fn settings(&self, extra: &str) -> String {
        let mut settings = format!("kind = \"{}\"\n", self.dialect.kind());
        if let Some((var, _)) = self.key {
            settings.push_str(&format!("api_key_env = \"{var}\"\n"));
        }
        settings + extra
    }

    /// A scripted upstream and a hub with this one provider in front of it.
    pub async fn start(&self, extra: &str) -> (Upstream, Hub) {
        if let Some((var, key)) = self.key {
            // SAFETY: each test file's variable is read and written by that file only.
            unsafe { std::env::set_var(var, key) };
        }
        let up = Upstream::start().await;
        let provider = hub::provider(self.name, &up.base_url(), self.models, &self.settings(extra));
        let hub = hub::start(vec![provider]).await;
        (up, hub)
    }
}

/// Ollama's streamed line with `content` ("Chat request (Streaming)").
pub fn ollama_line(content: &str, done: bool) -> Value {
    json!({"model": "llama3.2", "created_at": "2023-08-04T08:52:19.385406455-07:00",
           "message": {"role": "assistant", "content": content}, "done": done})
}

/// Ollama's "Hello from Ollama." stream, where the fallback chains end.
pub fn ollama_hello() -> Reply {
    Dialect::Ollama.stream(&[
        ollama_line("Hello", false),
        ollama_line(" from Ollama.", false),
        ollama_line("", true),
    ])
}
