//! Structured output on the chat surfaces: a Chat Completions `response_format`
//! (`json_object`, or `json_schema` with its `schema`) or a Messages
//! `output_config.format` (`{type: "json_schema", schema}`, what the Anthropic
//! SDK's `messages.parse` sends; the older top-level `output_format` too) asks an
//! agent for JSON. Such a request runs as one task over its conversation
//! (`Agent::run_task`: the answer checked against the schema, else the profile's
//! `output_schema`, one correction round, then `invalid_output`) and is answered
//! whole: a JSON answer is checked before it is sent, so a streamed request asking
//! for one is refused (400), as on `POST /v1/agents/{name}`.

use crate::agent::{ChatRequest, JsonOutput, Profile, Task, TaskAnswer, TaskError};
use crate::hub::Caller;
use crate::surfaces::App;
use crate::surfaces::chat_metrics::ChatStream;
use crate::surfaces::respond::{self, Resp};
use http::{HeaderValue, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;

/// What the request asked the answer to be.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Asked {
    /// Text (no format asked).
    Text,
    /// One JSON value satisfying `schema`, else the profile's `output_schema`,
    /// else `otherwise` (`json_object`: an object; none: any JSON).
    Json {
        schema: Option<Value>,
        otherwise: Option<Value>,
    },
}

/// A format the hub cannot honour (400), naming the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FormatError {
    /// The field (`response_format.type`).
    pub field: &'static str,
    /// What it must be.
    pub expected: String,
}

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.expected)
    }
}

impl std::error::Error for FormatError {}

fn refused(field: &'static str, expected: impl Into<String>) -> FormatError {
    FormatError {
        field,
        expected: expected.into(),
    }
}

/// The message of a streamed request asking for JSON.
pub(crate) const NO_STREAM: &str =
    "a JSON answer is checked whole before it is sent, so it cannot stream; send the request without stream";

/// A schema given as `field`: an object, or absent.
fn schema_at(value: Option<&Value>, field: &'static str) -> Result<Option<Value>, FormatError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(schema @ Value::Object(_)) => Ok(Some(schema.clone())),
        Some(_) => Err(refused(field, "must be a JSON Schema object")),
    }
}

/// Chat Completions' `response_format`.
pub(crate) fn openai_format(body: &Value) -> Result<Asked, FormatError> {
    let Some(format) = body.get("response_format").filter(|f| !f.is_null()) else {
        return Ok(Asked::Text);
    };
    match format.get("type").and_then(Value::as_str) {
        Some("text") => Ok(Asked::Text),
        Some("json_object") => Ok(Asked::Json {
            schema: None,
            otherwise: Some(json!({ "type": "object" })),
        }),
        Some("json_schema") => Ok(Asked::Json {
            schema: schema_at(
                format.pointer("/json_schema/schema"),
                "response_format.json_schema.schema",
            )?,
            otherwise: None,
        }),
        _ => Err(refused(
            "response_format.type",
            "must be \"text\", \"json_object\" or \"json_schema\"",
        )),
    }
}

/// Messages' `output_config.format` (or the older top-level `output_format`).
pub(crate) fn anthropic_format(body: &Value) -> Result<Asked, FormatError> {
    let (format, field) = match body.pointer("/output_config/format").filter(|f| !f.is_null()) {
        Some(format) => (format, "output_config.format"),
        None => match body.get("output_format").filter(|f| !f.is_null()) {
            Some(format) => (format, "output_format"),
            None => return Ok(Asked::Text),
        },
    };
    if format.get("type").and_then(Value::as_str) != Some("json_schema") {
        return Err(refused(field, "its type must be \"json_schema\""));
    }
    match format.get("schema") {
        Some(Value::Object(_)) => Ok(Asked::Json {
            schema: format.get("schema").cloned(),
            otherwise: None,
        }),
        _ => Err(refused(field, "its schema must be a JSON Schema object")),
    }
}

impl Asked {
    /// The JSON answer `profile` gives for this ask; `None` for text. A schema
    /// that does not compile is a 400 naming `field`.
    pub(crate) fn output(
        self,
        profile: &Profile,
        field: &'static str,
    ) -> Result<Option<JsonOutput>, FormatError> {
        let Asked::Json { schema, otherwise } = self else {
            return Ok(None);
        };
        let schema = schema.or_else(|| profile.output_schema.clone()).or(otherwise);
        JsonOutput::new(schema)
            .map(Some)
            .map_err(|e| refused(field, e.to_string()))
    }
}

/// Runs `chat` (a request naming an agent) as one task whose answer is `output`,
/// counted in the chat metrics as `metrics` once over.
pub(crate) async fn run(
    app: &Arc<App>,
    chat: ChatRequest,
    output: JsonOutput,
    caller: Caller,
    metrics: ChatStream,
) -> Result<TaskAnswer, TaskError> {
    let task = Task {
        agent: chat.agent.unwrap_or_default(),
        messages: chat.messages,
        sampling: chat.sampling,
        output: Some(output),
        parent: None,
        cancel: None,
        surface: chat.surface,
    };
    let metrics = metrics.agent_task(&app.agent, &task.agent);
    let answer = app.agent.run_task(task, caller).await;
    metrics.answered(&answer);
    answer
}

/// A task that gave no answer, in the hub's error shape: the agent's start
/// refusal, 502 `agent_failed`, or 502 `invalid_output` with its violations (and
/// `x-should-retry: false`: the SDKs would otherwise send it again as any 5xx).
pub(crate) fn task_error(e: TaskError) -> Resp {
    match e {
        TaskError::Start(e) => super::completion::agent_error(e),
        TaskError::Failed(error) => respond::error(StatusCode::BAD_GATEWAY, "agent_failed", error),
        TaskError::InvalidOutput(found) => {
            let message = TaskError::InvalidOutput(found.clone()).to_string();
            let mut body = respond::error_body("invalid_output", message);
            body["error"]["violations"] = serde_json::to_value(&found).expect("violations serialize");
            let mut resp = respond::json(StatusCode::BAD_GATEWAY, &body);
            resp.headers_mut()
                .insert("x-should-retry", HeaderValue::from_static("false"));
            resp
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_response_formats_read_as_asks() {
        assert_eq!(openai_format(&json!({})), Ok(Asked::Text));
        assert_eq!(
            openai_format(&json!({"response_format": {"type": "text"}})),
            Ok(Asked::Text)
        );
        assert_eq!(
            openai_format(&json!({"response_format": {"type": "json_object"}})),
            Ok(Asked::Json {
                schema: None,
                otherwise: Some(json!({"type": "object"}))
            })
        );
        let schema = json!({"type": "object", "required": ["sum"]});
        assert_eq!(
            openai_format(&json!({"response_format": {"type": "json_schema",
                "json_schema": {"name": "sum", "strict": true, "schema": schema}}})),
            Ok(Asked::Json {
                schema: Some(schema),
                otherwise: None
            })
        );
        let e = openai_format(&json!({"response_format": {"type": "xml"}})).unwrap_err();
        assert_eq!(e.field, "response_format.type");
        let e =
            openai_format(&json!({"response_format": {"type": "json_schema", "json_schema": {"schema": 3}}}))
                .unwrap_err();
        assert_eq!(e.field, "response_format.json_schema.schema");
    }

    #[test]
    fn anthropic_output_formats_read_as_asks() {
        assert_eq!(
            anthropic_format(&json!({"output_config": {"effort": "low"}})),
            Ok(Asked::Text)
        );
        let schema = json!({"type": "object"});
        let ask = Asked::Json {
            schema: Some(schema.clone()),
            otherwise: None,
        };
        assert_eq!(
            anthropic_format(
                &json!({"output_config": {"format": {"type": "json_schema", "schema": schema}}})
            ),
            Ok(ask.clone())
        );
        assert_eq!(
            anthropic_format(&json!({"output_format": {"type": "json_schema", "schema": schema}})),
            Ok(ask)
        );
        for (body, field) in [
            (
                json!({"output_config": {"format": {"type": "text"}}}),
                "output_config.format",
            ),
            (json!({"output_format": {"type": "json_schema"}}), "output_format"),
        ] {
            assert_eq!(anthropic_format(&body).unwrap_err().field, field);
        }
    }
}
