//! OpenAI chat-completions wire types as the hub reads them.
//!
//! Requests stay `serde_json::Value` so every field a client sends (including ones
//! newer than this code) reaches the upstream unchanged; only `model`, `stream` and
//! `stream_options` are ever touched. Streamed chunks are parsed into borrowed,
//! lenient structs: every field optional, unknown fields ignored, strings borrowed
//! from the event text when they need no unescaping (this is the hot path).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::borrow::Cow;

mod scan;

/// A string borrowed from the event text when it has no escapes, owned otherwise.
/// (serde borrows a bare `Cow<str>` field but never one inside an `Option`.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Str<'a>(pub Cow<'a, str>);

impl std::ops::Deref for Str<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Str<'a>, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

/// One `chat.completion.chunk` (or an error frame, which has only `error`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ChatChunk<'a> {
    #[serde(borrow)]
    pub object: Option<Str<'a>>,
    #[serde(borrow)]
    pub model: Option<Str<'a>>,
    /// The choice with index 0 (a missing index counts as 0); other choices of an
    /// `n > 1` request are skipped while parsing, since one UI message shows one.
    #[serde(borrow, rename = "choices", deserialize_with = "first_choice")]
    pub choice: Option<Choice<'a>>,
    /// Rare fields are boxed: the struct is moved a few times per chunk while
    /// parsing, and its size showed up as memcpy in profiles.
    pub usage: Option<Box<Value>>,
    /// Groq puts usage here (and, lately, also at the top level).
    pub x_groq: Option<Box<XGroq>>,
    /// A mid-stream error frame: `{"error": {"message", "type", "param", "code"}}`.
    pub error: Option<Box<Value>>,
    /// Some servers send `{"object": "error", "message": ...}` instead.
    #[serde(borrow)]
    pub message: Option<Str<'a>>,
}

/// Keeps the first index-0 choice of the `choices` array without collecting the
/// array (this runs once per streamed chunk).
fn first_choice<'de: 'a, 'a, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Choice<'a>>, D::Error> {
    struct V<'a>(std::marker::PhantomData<Choice<'a>>);
    impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
        type Value = Option<Choice<'a>>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an array of choices")
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut found = None;
            while let Some(choice) = seq.next_element::<Choice<'a>>()? {
                if found.is_none() && choice.index.unwrap_or(0) == 0 {
                    found = Some(choice);
                }
            }
            Ok(found)
        }
    }
    d.deserialize_any(V(std::marker::PhantomData))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct XGroq {
    pub usage: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Choice<'a> {
    pub index: Option<u32>,
    #[serde(borrow)]
    pub delta: Option<Delta<'a>>,
    #[serde(borrow)]
    pub finish_reason: Option<Str<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Delta<'a> {
    #[serde(borrow)]
    pub content: Option<Str<'a>>,
    #[serde(borrow)]
    pub refusal: Option<Str<'a>>,
    /// DeepSeek, xAI, Qwen, llama.cpp.
    #[serde(borrow)]
    pub reasoning_content: Option<Str<'a>>,
    /// vLLM, Ollama, OpenRouter, Groq.
    #[serde(borrow)]
    pub reasoning: Option<Str<'a>>,
    #[serde(borrow)]
    pub tool_calls: Option<Vec<ToolCallDelta<'a>>>,
    /// Provider extensions of the message (Anthropic's signed thinking blocks,
    /// `llm::anthropic_wire::THINKING_POINTER`).
    pub extra_content: Option<Box<serde_json::Value>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ToolCallDelta<'a> {
    pub index: Option<u32>,
    #[serde(borrow)]
    pub id: Option<Str<'a>>,
    #[serde(borrow)]
    pub function: Option<FunctionDelta<'a>>,
    /// Provider extensions of the call (Gemini's
    /// `extra_content.google.thought_signature`).
    pub extra_content: Option<Box<serde_json::Value>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct FunctionDelta<'a> {
    #[serde(borrow)]
    pub name: Option<Str<'a>>,
    #[serde(borrow)]
    pub arguments: Option<Str<'a>>,
}

impl<'a> ChatChunk<'a> {
    /// Parses one streamed chunk: the fast scanner for the usual shape, serde for
    /// anything else (the two agree; see `scan`).
    pub fn parse(text: &'a str) -> Result<ChatChunk<'a>, serde_json::Error> {
        let mut chunk = ChatChunk::default();
        chunk.parse_from(text).map(|()| chunk)
    }

    /// [`parse`](ChatChunk::parse) into `self`, a default chunk (what it holds
    /// after an error is unspecified): the transformer's hot path, which keeps
    /// the chunk where it is instead of moving it out of a `Result`.
    pub fn parse_from(&mut self, text: &'a str) -> Result<(), serde_json::Error> {
        if scan::parse_into(text, self).is_some() {
            return Ok(());
        }
        *self = serde_json::from_str(text)?;
        Ok(())
    }

    /// The error message if this chunk is an upstream error frame.
    pub fn error_message(&self) -> Option<String> {
        if let Some(err) = &self.error {
            let message = match &**err {
                Value::String(s) => s.clone(),
                Value::Object(o) => match o.get("message") {
                    Some(Value::String(s)) => s.clone(),
                    _ => err.to_string(),
                },
                other => other.to_string(),
            };
            return Some(message);
        }
        if self.object.as_deref() == Some("error") {
            return Some(self.message.as_deref().unwrap_or("upstream error").to_string());
        }
        None
    }

    /// Usage from wherever this provider put it.
    pub fn usage(&self) -> Option<Usage> {
        let raw = match self.usage.as_deref() {
            Some(u @ Value::Object(_)) => u,
            _ => self.x_groq.as_ref()?.usage.as_ref()?,
        };
        Usage::from_openai(raw)
    }
}

/// Token counts in the AI SDK's naming (`LanguageModelUsage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens (OpenAI's `prompt_tokens`).
    pub input_tokens: u64,
    /// Completion tokens (OpenAI's `completion_tokens`).
    pub output_tokens: u64,
    /// Input plus output, as the provider counted them.
    pub total_tokens: u64,
    /// The part of the output spent on reasoning, when the provider says.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reasoning_tokens: Option<u64>,
    /// The part of the input served from the provider's prompt cache, when it says.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cached_input_tokens: Option<u64>,
}

impl Usage {
    /// Reads an OpenAI `usage` object; `None` when it has no token counts.
    pub fn from_openai(raw: &Value) -> Option<Usage> {
        let n = |v: Option<&Value>| v.and_then(Value::as_u64);
        let input = n(raw.get("prompt_tokens"));
        let output = n(raw.get("completion_tokens"));
        if input.is_none() && output.is_none() {
            return None;
        }
        let (input, output) = (input.unwrap_or(0), output.unwrap_or(0));
        Some(Usage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: n(raw.get("total_tokens")).unwrap_or(input + output),
            reasoning_tokens: n(raw.pointer("/completion_tokens_details/reasoning_tokens")),
            cached_input_tokens: n(raw.pointer("/prompt_tokens_details/cached_tokens")),
        })
    }
}

/// Sum of two steps' usage (the agent loop reports a turn's total).
impl std::ops::Add for Usage {
    type Output = Usage;

    fn add(self, other: Usage) -> Usage {
        let opt = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        Usage {
            input_tokens: self.input_tokens + other.input_tokens,
            output_tokens: self.output_tokens + other.output_tokens,
            total_tokens: self.total_tokens + other.total_tokens,
            reasoning_tokens: opt(self.reasoning_tokens, other.reasoning_tokens),
            cached_input_tokens: opt(self.cached_input_tokens, other.cached_input_tokens),
        }
    }
}

/// Why a request body cannot be proxied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadRequest(pub String);

impl std::fmt::Display for BadRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Checks a client's chat-completions body: a JSON object with a string `model` and
/// a `messages` array. Returns the requested model name.
pub(crate) fn requested_model(body: &Value) -> Result<&str, BadRequest> {
    let Value::Object(obj) = body else {
        return Err(BadRequest("the request body must be a JSON object".into()));
    };
    let model = match obj.get("model") {
        Some(Value::String(m)) if !m.is_empty() => m.as_str(),
        Some(_) => return Err(BadRequest("\"model\" must be a non-empty string".into())),
        None => return Err(BadRequest("\"model\" is required".into())),
    };
    match obj.get("messages") {
        Some(Value::Array(_)) => Ok(model),
        Some(_) => Err(BadRequest("\"messages\" must be an array".into())),
        None => Err(BadRequest("\"messages\" is required".into())),
    }
}

/// Whether the client asked for a streamed response.
pub(crate) fn wants_stream(body: &Value) -> bool {
    body.get("stream").and_then(Value::as_bool).unwrap_or(false)
}

/// Prepares a body for a streamed call whose chunks the hub transforms: the upstream
/// model name, `stream: true`, and `stream_options.include_usage` so usage arrives
/// (other `stream_options` keys are kept).
pub(crate) fn prepare_stream_body(body: &mut Value, upstream_model: &str) {
    let Value::Object(obj) = body else { return };
    obj.insert("model".into(), Value::String(upstream_model.to_string()));
    obj.insert("stream".into(), Value::Bool(true));
    let options = obj
        .entry("stream_options")
        .or_insert_with(|| Value::Object(Map::new()));
    if !options.is_object() {
        *options = Value::Object(Map::new());
    }
    options
        .as_object_mut()
        .expect("just made an object")
        .insert("include_usage".into(), Value::Bool(true));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn chunks_parse_leniently_and_borrow() {
        let text = r#"{"id":"x","choices":[{"delta":{"content":"hi","tool_calls":[{"id":"","function":{"arguments":"{\"a"}}]},"finish_reason":null,"logprobs":null}],"usage":null,"obfuscation":"q"}"#;
        let chunk: ChatChunk = serde_json::from_str(text).unwrap();
        assert!(matches!(
            chunk.choice.as_ref().unwrap().delta.as_ref().unwrap().content,
            Some(Str(Cow::Borrowed("hi")))
        ));
        let escaped: ChatChunk =
            serde_json::from_str(r#"{"choices":[{"delta":{"content":"a\nb"}}]}"#).unwrap();
        assert_eq!(
            escaped
                .choice
                .as_ref()
                .unwrap()
                .delta
                .as_ref()
                .unwrap()
                .content
                .as_deref(),
            Some("a\nb")
        );
        let call = &chunk
            .choice
            .as_ref()
            .unwrap()
            .delta
            .as_ref()
            .unwrap()
            .tool_calls
            .as_ref()
            .unwrap()[0];
        assert_eq!(call.index, None);
        assert_eq!(call.id.as_deref(), Some(""));
        assert_eq!(call.function.as_ref().unwrap().arguments.as_deref(), Some("{\"a"));
        assert!(chunk.usage().is_none());
        assert!(chunk.error_message().is_none());
    }

    #[test]
    fn usage_is_found_in_each_providers_place() {
        let top: ChatChunk = serde_json::from_str(
            r#"{"choices":[],"usage":{"prompt_tokens":15,"completion_tokens":78,"total_tokens":93,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":64}}}"#,
        )
        .unwrap();
        assert_eq!(
            top.usage(),
            Some(Usage {
                input_tokens: 15,
                output_tokens: 78,
                total_tokens: 93,
                reasoning_tokens: Some(64),
                cached_input_tokens: Some(4)
            })
        );
        let groq: ChatChunk = serde_json::from_str(
            r#"{"choices":[],"x_groq":{"usage":{"prompt_tokens":2,"completion_tokens":3}}}"#,
        )
        .unwrap();
        assert_eq!(groq.usage().unwrap().total_tokens, 5);
        let sum = groq.usage().unwrap() + top.usage().unwrap();
        assert_eq!((sum.input_tokens, sum.reasoning_tokens), (17, Some(64)));
    }

    #[test]
    fn error_frames_are_recognised() {
        let e: ChatChunk =
            serde_json::from_str(r#"{"error":{"message":"overloaded","type":"server_error"}}"#).unwrap();
        assert_eq!(e.error_message().as_deref(), Some("overloaded"));
        let e: ChatChunk = serde_json::from_str(r#"{"object":"error","message":"bad","code":400}"#).unwrap();
        assert_eq!(e.error_message().as_deref(), Some("bad"));
    }

    #[test]
    fn request_checks_and_stream_preparation_keep_unknown_fields() {
        assert_eq!(requested_model(&json!({"model": "m", "messages": []})), Ok("m"));
        assert!(
            requested_model(&json!({"messages": []}))
                .unwrap_err()
                .0
                .contains("model")
        );
        assert!(
            requested_model(&json!({"model": "m"}))
                .unwrap_err()
                .0
                .contains("messages")
        );
        assert!(requested_model(&json!([1])).is_err());
        let mut body =
            json!({"model": "p/m", "messages": [], "x_custom": {"k": 1}, "stream_options": {"other": true}});
        prepare_stream_body(&mut body, "m");
        assert_eq!(
            body,
            json!({"model": "m", "messages": [], "x_custom": {"k": 1}, "stream": true, "stream_options": {"other": true, "include_usage": true}})
        );
        assert!(wants_stream(&body));
    }
}
