//! The hub's request (OpenAI chat completions) as Google's Generative Language
//! API (`POST /v1beta/models/{model}:generateContent`, or
//! `:streamGenerateContent?alt=sse`) takes it.
//!
//! - `system`/`developer` messages → `systemInstruction` (their texts joined by
//!   a blank line); user and assistant messages → `contents` with roles `user`
//!   and `model`; text as `text` parts, images as `inlineData` (only `data:`
//!   URLs: the API fetches no URL); an assistant's tool calls as `functionCall`
//!   parts (arguments as an object) with their `thoughtSignature` (from
//!   `extra_content.google.thought_signature`, as `gemini_answer` gives it;
//!   else, on a message's first call, the placeholder Google documents,
//!   [`NO_SIGNATURE`], since Gemini 3 refuses a call without one), its reasoning
//!   left out (Gemini takes thoughts back only with its own signature); a `tool`
//!   message as a
//!   `functionResponse` part named after the call it answers, its content as the
//!   `response` object (a JSON object as it is, other text as `{"result": ...}`);
//!   consecutive contents of one role merged (parallel calls' answers go together);
//! - `tools` → one `functionDeclarations` entry each, the parameters mapped by
//!   [`schema`] to the OpenAPI subset Gemini accepts; `tool_choice` auto /
//!   required / none / a function → `functionCallingConfig` mode `AUTO` / `ANY` /
//!   `NONE` / `ANY` with `allowedFunctionNames`;
//! - `generationConfig`: the provider's `options`, the model's over them key by
//!   key, then the request's `temperature`, `top_p` (`topP`), `max_tokens` or
//!   `max_completion_tokens` (`maxOutputTokens`), `stop` (`stopSequences`),
//!   `seed`, `presence_penalty`, `frequency_penalty`, `response_format` (JSON
//!   mode, a schema as `responseSchema`); `think` (model's, else provider's) sets
//!   `thinkingConfig.includeThoughts` unless the options set it.

use super::RequestError;
use super::parts::{self, Choice, Piece};
use crate::config::ProviderKind;
use crate::llm::providers::Route;
use serde_json::{Map, Value, json};

fn bad(message: String) -> RequestError {
    RequestError {
        kind: ProviderKind::Gemini,
        message,
    }
}

/// The endpoint (under the base URL, which ends in the API version) for `model`.
pub(crate) fn path(model: &str, stream: bool) -> Result<String, RequestError> {
    let model = model.strip_prefix("models/").unwrap_or(model);
    let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
    if model.is_empty() || !model.chars().all(valid) {
        return Err(bad(format!(
            "the model name {model:?} is not one Gemini has (letters, digits, '-', '.', '_')"
        )));
    }
    Ok(if stream {
        format!("/models/{model}:streamGenerateContent?alt=sse")
    } else {
        format!("/models/{model}:generateContent")
    })
}

/// `body` as a `GenerateContentRequest` to `route`.
pub(crate) fn request(route: &Route, body: &Value) -> Result<Value, RequestError> {
    let empty = Vec::new();
    let messages = body.get("messages").and_then(Value::as_array).unwrap_or(&empty);
    let (system, contents) = self::contents(messages)?;
    let mut out = Map::new();
    out.insert("contents".into(), Value::Array(contents));
    if !system.is_empty() {
        out.insert("systemInstruction".into(), json!({"parts": [{"text": system}]}));
    }
    tools(body, &mut out);
    let config = generation_config(route, body);
    if !config.is_empty() {
        out.insert("generationConfig".into(), Value::Object(config));
    }
    Ok(Value::Object(out))
}

fn generation_config(route: &Route, body: &Value) -> Map<String, Value> {
    let mut config = route.provider.config.options.clone();
    let settings = route.settings();
    if let Some(settings) = settings {
        config.extend(settings.options.clone());
    }
    let fields = [
        ("temperature", "temperature"),
        ("top_p", "topP"),
        ("seed", "seed"),
        ("presence_penalty", "presencePenalty"),
        ("frequency_penalty", "frequencyPenalty"),
        ("max_tokens", "maxOutputTokens"),
        ("max_completion_tokens", "maxOutputTokens"),
    ];
    parts::copy_fields(body, &mut config, &fields);
    if let Some(stop) = parts::stop_list(body) {
        config.insert("stopSequences".into(), stop);
    }
    let rf = body.get("response_format");
    match rf.and_then(|f| f.get("type")).and_then(Value::as_str) {
        Some("json_object") => {
            config.insert("responseMimeType".into(), json!("application/json"));
        }
        Some("json_schema") => {
            config.insert("responseMimeType".into(), json!("application/json"));
            if let Some(s) = rf.and_then(|f| f.pointer("/json_schema/schema")) {
                config.insert("responseSchema".into(), schema(s));
            }
        }
        _ => {}
    }
    let think = settings.and_then(|s| s.think).or(route.provider.config.think);
    if let Some(think) = think {
        let thinking = config.entry("thinkingConfig").or_insert_with(|| json!({}));
        if let Some(thinking) = thinking.as_object_mut() {
            thinking.entry("includeThoughts").or_insert(json!(think));
        }
    }
    config
}

fn tools(body: &Value, out: &mut Map<String, Value>) {
    let Some(tools) = parts::tools(body) else {
        return;
    };
    let declarations: Vec<Value> = tools
        .iter()
        .map(|t| {
            let mut declaration = parts::declaration(t);
            // A function without parameters has none (Gemini rejects an empty object schema).
            if let Some(p) = t["function"].get("parameters").filter(|p| has_properties(p)) {
                declaration["parameters"] = schema(p);
            }
            declaration
        })
        .collect();
    out.insert("tools".into(), json!([{ "functionDeclarations": declarations }]));
    let config = match parts::tool_choice(body) {
        Choice::Required => json!({"mode": "ANY"}),
        Choice::None => json!({"mode": "NONE"}),
        Choice::Function(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
        Choice::Auto => json!({"mode": "AUTO"}),
    };
    out.insert("toolConfig".into(), json!({ "functionCallingConfig": config }));
}

fn has_properties(schema: &Value) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty())
}

/// Schema keywords Gemini's `Schema` (an OpenAPI 3.0 subset) takes as they are.
const SCHEMA_KEYS: [&str; 15] = [
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "required",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "default",
];

/// A JSON Schema as Gemini's `Schema`: the keys of [`SCHEMA_KEYS`] kept,
/// `properties`, `items` and `anyOf` (also `oneOf`) mapped in turn, a type list
/// with `"null"` as the type and `nullable`, `const` as a one-value `enum`;
/// everything else (`$schema`, `$ref`/`$defs`, `additionalProperties`, `allOf`,
/// `not`, exclusive bounds, `examples`, ...) is dropped.
pub(crate) fn schema(s: &Value) -> Value {
    let Some(s) = s.as_object() else {
        return json!({});
    };
    let mut out = Map::new();
    for key in SCHEMA_KEYS {
        if let Some(v) = s.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    if let Some(Value::Array(types)) = s.get("type") {
        let named: Vec<&Value> = types.iter().filter(|t| t.as_str() != Some("null")).collect();
        match named.as_slice() {
            [one] => {
                out.insert("type".into(), (*one).clone());
            }
            _ => {
                out.remove("type");
            }
        }
        if named.len() < types.len() {
            out.insert("nullable".into(), json!(true));
        }
    }
    if let Some(c) = s.get("const") {
        out.insert("enum".into(), json!([c]));
    }
    if let Some(Value::Object(props)) = s.get("properties") {
        let props: Map<String, Value> = props.iter().map(|(k, v)| (k.clone(), schema(v))).collect();
        out.insert("properties".into(), Value::Object(props));
    }
    if let Some(items) = s.get("items").filter(|i| i.is_object()) {
        out.insert("items".into(), schema(items));
    }
    if let Some(Value::Array(any)) = s.get("anyOf").or_else(|| s.get("oneOf")) {
        out.insert("anyOf".into(), Value::Array(any.iter().map(schema).collect()));
    }
    Value::Object(out)
}

/// The system text and the contents.
fn contents(messages: &[Value]) -> Result<(String, Vec<Value>), RequestError> {
    let mut system = Vec::new();
    let mut out: Vec<Value> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let (role, parts) = match m.get("role").and_then(Value::as_str).unwrap_or("") {
            "system" | "developer" => {
                system.push(text_of(i, &m["content"])?);
                continue;
            }
            "user" => ("user", content_parts(i, &m["content"])?),
            "assistant" => ("model", model_parts(i, m)?),
            "tool" => ("user", vec![function_response(i, &messages[..i], m)?]),
            other => {
                return Err(bad(format!(
                    "messages[{i}]: role {other:?} is not one Gemini knows"
                )));
            }
        };
        if parts.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last["role"] == role => {
                last["parts"].as_array_mut().expect("parts").extend(parts);
            }
            _ => out.push(json!({"role": role, "parts": parts})),
        }
    }
    Ok((system.join("\n\n"), out))
}

/// The `thoughtSignature` Google documents for a function call whose signature
/// is not at hand ("Thought signatures": a conversation from elsewhere): Gemini 3
/// refuses a call sent back without one.
const NO_SIGNATURE: &str = "skip_thought_signature_validator";

fn model_parts(i: usize, m: &Value) -> Result<Vec<Value>, RequestError> {
    let mut parts = content_parts(i, &m["content"])?;
    let calls = m.get("tool_calls").and_then(Value::as_array);
    for (n, call) in calls.into_iter().flatten().enumerate() {
        let args = parts::call_arguments(ProviderKind::Gemini, i, call)?;
        let mut part = json!({"functionCall": {"name": call["function"]["name"], "args": args}});
        let signature = call
            .pointer("/extra_content/google/thought_signature")
            .filter(|s| s.is_string());
        match signature {
            Some(signature) => part["thoughtSignature"] = signature.clone(),
            None if n == 0 => part["thoughtSignature"] = json!(NO_SIGNATURE),
            None => {}
        }
        parts.push(part);
    }
    Ok(parts)
}

/// Tool message `i` as a `functionResponse` part, named after the call it answers.
fn function_response(i: usize, earlier: &[Value], m: &Value) -> Result<Value, RequestError> {
    let id = m.get("tool_call_id").and_then(Value::as_str).unwrap_or("");
    let name = earlier
        .iter()
        .rev()
        .filter_map(|m| m.get("tool_calls").and_then(Value::as_array))
        .flatten()
        .find(|c| c.get("id").and_then(Value::as_str) == Some(id))
        .and_then(|c| c.pointer("/function/name").and_then(Value::as_str))
        .ok_or_else(|| {
            bad(format!(
                "messages[{i}]: the tool result answers {id:?}, which no earlier assistant message called"
            ))
        })?;
    let text = text_of(i, &m["content"])?;
    let response = match serde_json::from_str::<Value>(&text) {
        Ok(object @ Value::Object(_)) => object,
        _ => json!({ "result": text }),
    };
    Ok(json!({"functionResponse": {"name": name, "response": response}}))
}

/// A message's content as Gemini parts (empty text left out).
fn content_parts(i: usize, content: &Value) -> Result<Vec<Value>, RequestError> {
    let mut out = Vec::new();
    for piece in parts::pieces(ProviderKind::Gemini, i, content)? {
        out.push(match piece {
            Piece::Text(text) => json!({ "text": text }),
            Piece::Image(url) => {
                let (mime_type, data) = parts::data_url(url).ok_or_else(|| {
                    bad(format!(
                        "messages[{i}]: an image given by URL: Gemini takes images inline, as data: URLs with base64"
                    ))
                })?;
                json!({"inlineData": {"mimeType": mime_type, "data": data}})
            }
        });
    }
    Ok(out)
}

/// The text of a system or tool message.
fn text_of(i: usize, content: &Value) -> Result<String, RequestError> {
    parts::text(ProviderKind::Gemini, i, content)
}
