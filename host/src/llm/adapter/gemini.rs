//! The hub's request (OpenAI chat completions) as Google's Generative Language
//! API (`POST /v1beta/models/{model}:generateContent`, or
//! `:streamGenerateContent?alt=sse`) takes it.
//!
//! - `system`/`developer` messages → `systemInstruction` (their texts joined by
//!   a blank line); user and assistant messages → `contents` with roles `user`
//!   and `model`; text as `text` parts, images as `inlineData` (`data:` URLs)
//!   or `fileData` (`https`/`gs` URLs, the type from the extension); an assistant's tool calls as `functionCall`
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
//!   `gemini_schema` to the OpenAPI subset Gemini accepts (local `$ref`s
//!   inlined); `tool_choice` auto /
//!   required / none / a function → `functionCallingConfig` mode `AUTO` / `ANY` /
//!   `NONE` / `ANY` with `allowedFunctionNames`;
//! - `generationConfig`: the provider's `options`, the model's over them key by
//!   key, then the request's `temperature`, `top_p` (`topP`), `max_tokens` or
//!   `max_completion_tokens` (`maxOutputTokens`), `stop` (`stopSequences`),
//!   `seed`, `presence_penalty`, `frequency_penalty`, `response_format` (JSON
//!   mode, a schema as `responseSchema`); `think` (model's, else provider's) sets
//!   `thinkingConfig.includeThoughts` unless the options set it.

use super::RequestError;
use super::gemini_schema;
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
    tools(body, &mut out)?;
    let config = generation_config(route, body)?;
    if !config.is_empty() {
        out.insert("generationConfig".into(), Value::Object(config));
    }
    Ok(Value::Object(out))
}

fn generation_config(route: &Route, body: &Value) -> Result<Map<String, Value>, RequestError> {
    let mut config = parts::configured_options(route);
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
                let s = gemini_schema::map(s).map_err(|e| bad(format!("response_format: {e}")))?;
                config.insert("responseSchema".into(), s);
            }
        }
        _ => {}
    }
    let think = route
        .settings()
        .and_then(|s| s.think)
        .or(route.provider.config.think);
    if let Some(think) = think {
        let thinking = config.entry("thinkingConfig").or_insert_with(|| json!({}));
        if let Some(thinking) = thinking.as_object_mut() {
            thinking.entry("includeThoughts").or_insert(json!(think));
        }
    }
    Ok(config)
}

fn tools(body: &Value, out: &mut Map<String, Value>) -> Result<(), RequestError> {
    let Some(tools) = parts::tools(body) else {
        return Ok(());
    };
    let mut declarations = Vec::with_capacity(tools.len());
    for (i, t) in tools.iter().enumerate() {
        let mut declaration = parts::declaration(t);
        // A function without parameters has none (Gemini rejects an empty object schema).
        if let Some(p) = t["function"].get("parameters").filter(|p| has_properties(p)) {
            let name = t["function"]["name"].as_str().unwrap_or("");
            declaration["parameters"] = gemini_schema::map(p)
                .map_err(|e| bad(format!("tools[{i}] ({name:?}): its parameters: {e}")))?;
        }
        declarations.push(declaration);
    }
    out.insert("tools".into(), json!([{ "functionDeclarations": declarations }]));
    let config = match parts::tool_choice(body) {
        Choice::Required => json!({"mode": "ANY"}),
        Choice::None => json!({"mode": "NONE"}),
        Choice::Function(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
        Choice::Auto => json!({"mode": "AUTO"}),
    };
    out.insert("toolConfig".into(), json!({ "functionCallingConfig": config }));
    Ok(())
}

fn has_properties(schema: &Value) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty())
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
            Piece::Image(url) => match parts::data_url(url) {
                Some((mime_type, data)) => json!({"inlineData": {"mimeType": mime_type, "data": data}}),
                None => json!({"fileData": {"mimeType": image_type(i, url)?, "fileUri": url}}),
            },
        });
    }
    Ok(out)
}

/// Image types Gemini reads, by file extension ("Image understanding":
/// supported image formats).
const IMAGE_TYPES: [(&str, &str); 6] = [
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("webp", "image/webp"),
    ("heic", "image/heic"),
    ("heif", "image/heif"),
];

/// The media type of the image at `url` (an `https` or `gs` URL Gemini
/// fetches itself), from its path's extension.
fn image_type(i: usize, url: &str) -> Result<&'static str, RequestError> {
    let Some((scheme, rest)) = url
        .split_once("://")
        .filter(|(s, _)| matches!(*s, "https" | "gs"))
    else {
        return Err(bad(format!(
            "messages[{i}]: an image URL Gemini cannot fetch: it takes data: URLs (base64) inline and https:// or gs:// URLs as files"
        )));
    };
    let path = rest.split(['?', '#']).next().unwrap_or("");
    let extension = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    let found = IMAGE_TYPES.iter().find(|(e, _)| Some(*e) == extension.as_deref());
    found.map(|(_, t)| *t).ok_or_else(|| {
        bad(format!(
            "messages[{i}]: the {scheme} image URL does not end in .png, .jpg, .jpeg, .webp, .heic or .heif, so its type is unknown; send it as a data: URL"
        ))
    })
}

/// The text of a system or tool message.
fn text_of(i: usize, content: &Value) -> Result<String, RequestError> {
    parts::text(ProviderKind::Gemini, i, content)
}
