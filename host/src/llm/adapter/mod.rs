//! Provider kinds (`[[providers]] kind`): the seam between the hub's one internal
//! request and answer and each provider's native API.
//!
//! Inside the hub a model call is an OpenAI chat-completions request, answered by
//! OpenAI chunks (SSE ending in `[DONE]`), a `chat.completion` object, or an
//! OpenAI error body: every surface (the proxy, `/v1/messages`, the UI stream, the
//! agent loop) speaks that to the llm layer. [`prepare`] turns such a request into
//! the provider's call (endpoint, body, whether the upstream streams), and
//! [`answer`] makes the provider's response read as the OpenAI one again: same
//! status and headers (`Retry-After` kept), the body translated while it is read
//! (a [`Recode`] on the body).
//!
//! The per-provider `stream` switch lives here too: with `stream = false` the
//! upstream is asked for a whole answer, which [`whole`] turns into a proper stream
//! when the caller asked for one. An `openai` or `openrouter` provider that
//! streams passes everything through untouched but the Anthropic thinking blocks
//! assistant messages may carry (`anthropic_wire::without_thinking`); OpenRouter
//! is always spoken to through Chat Completions, its attribution headers are
//! `llm::upstream`'s.

pub(crate) mod anthropic;
mod anthropic_answer;
#[cfg(test)]
mod anthropic_tests;
pub(crate) mod gemini;
mod gemini_answer;
mod gemini_schema;
#[cfg(test)]
mod gemini_tests;
pub(crate) mod ollama;
mod ollama_answer;
mod parts;
mod sse_events;
#[cfg(test)]
mod tests;
pub(crate) mod whole;

use super::anthropic_wire;
use super::client::{Recode, Response};
use super::providers::Route;
use crate::config::ProviderKind;
use bytes::Bytes;
use http::{HeaderValue, header};
use serde_json::{Value, json};

/// One upstream call in the provider's dialect.
#[derive(Debug)]
pub(crate) struct Call {
    /// The endpoint under the provider's base URL (with a query for Gemini).
    pub path: String,
    /// The request body.
    pub body: Bytes,
    /// Whether the upstream is asked to stream.
    pub streams: bool,
    /// Whether the caller asked for a stream (`stream: true`).
    pub wants_stream: bool,
}

/// Why a request cannot be put in a provider's dialect (the client can change it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestError {
    /// The provider's kind.
    pub kind: ProviderKind,
    /// What in the request the provider cannot take.
    pub message: String,
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = self.kind.as_str();
        let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        write!(
            f,
            "{article} {kind} provider cannot take this request: {}",
            self.message
        )
    }
}

impl std::error::Error for RequestError {}

/// `body` (an OpenAI chat-completions request, `model` already the target's) as
/// `route`'s provider takes it.
pub(crate) fn prepare(route: &Route, body: &Value) -> Result<Call, RequestError> {
    let provider = &route.provider;
    let wants_stream = super::openai::wants_stream(body);
    let streams = wants_stream && provider.config.stream;
    let (path, native) = match provider.kind {
        ProviderKind::OpenAi | ProviderKind::OpenRouter => {
            let mut own = anthropic_wire::without_thinking(body);
            if wants_stream && !streams {
                own = Some(unstreamed(own.as_ref().unwrap_or(body)));
            }
            ("/chat/completions".to_string(), own)
        }
        ProviderKind::Ollama => (
            "/api/chat".to_string(),
            Some(ollama::request(route, body, streams)?),
        ),
        ProviderKind::Anthropic => (
            "/messages".to_string(),
            Some(anthropic::request(route, body, streams)?),
        ),
        ProviderKind::Gemini => (
            gemini::path(&route.model, streams)?,
            Some(gemini::request(route, body)?),
        ),
    };
    let json = native.as_ref().unwrap_or(body);
    Ok(Call {
        path,
        body: Bytes::from(serde_json::to_vec(json).expect("a JSON value serializes")),
        streams,
        wants_stream,
    })
}

/// An OpenAI request asked for unstreamed.
fn unstreamed(body: &Value) -> Value {
    let mut body = body.clone();
    if let Some(obj) = body.as_object_mut() {
        obj.insert("stream".into(), Value::Bool(false));
        obj.remove("stream_options");
    }
    body
}

/// `resp` to `call` read as the OpenAI answer (see the module docs). `max_whole`
/// bounds an unstreamed answer read to translate it.
pub(crate) fn answer(route: &Route, call: &Call, mut resp: Response, max_whole: usize) -> Response {
    let kind = route.provider.kind;
    let recode: Box<dyn Recode> = if !resp.status.is_success() {
        match kind {
            ProviderKind::OpenAi | ProviderKind::OpenRouter => return resp,
            ProviderKind::Ollama | ProviderKind::Anthropic | ProviderKind::Gemini => {
                Box::new(whole::Whole::errors(max_whole))
            }
        }
    } else {
        let max_event = (route.provider.config.max_event_kb.max(1) as usize).saturating_mul(1024);
        match (kind, call.streams, call.wants_stream) {
            (ProviderKind::OpenAi | ProviderKind::OpenRouter, true, _)
            | (ProviderKind::OpenAi | ProviderKind::OpenRouter, false, false) => return resp,
            (ProviderKind::OpenAi | ProviderKind::OpenRouter, false, true) => {
                Box::new(whole::Whole::stream(max_whole, std::convert::identity))
            }
            (ProviderKind::Ollama, true, _) => Box::new(ollama_answer::Lines::new(max_event)),
            (ProviderKind::Ollama, false, true) => {
                Box::new(whole::Whole::stream(max_whole, ollama_answer::completion))
            }
            (ProviderKind::Ollama, false, false) => {
                Box::new(whole::Whole::json(max_whole, ollama_answer::completion))
            }
            (ProviderKind::Anthropic, true, _) => {
                Box::new(sse_events::Sse::new(max_event, anthropic_answer::Events::new()))
            }
            (ProviderKind::Anthropic, false, true) => {
                Box::new(whole::Whole::stream(max_whole, anthropic_answer::completion))
            }
            (ProviderKind::Anthropic, false, false) => {
                Box::new(whole::Whole::json(max_whole, anthropic_answer::completion))
            }
            (ProviderKind::Gemini, true, _) => {
                Box::new(sse_events::Sse::new(max_event, gemini_answer::Events::new()))
            }
            (ProviderKind::Gemini, false, true) => {
                Box::new(whole::Whole::stream(max_whole, gemini_answer::completion))
            }
            (ProviderKind::Gemini, false, false) => {
                Box::new(whole::Whole::json(max_whole, gemini_answer::completion))
            }
        }
    };
    let content_type = if resp.status.is_success() && call.wants_stream {
        "text/event-stream"
    } else {
        "application/json"
    };
    resp.headers
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp.headers.remove(header::CONTENT_LENGTH);
    resp.body = resp.body.recode(recode);
    resp
}

/// An OpenAI error body with `message`.
pub(crate) fn error_body(message: &str) -> Value {
    json!({"error": {"message": message, "type": "upstream_error", "param": null, "code": null}})
}
