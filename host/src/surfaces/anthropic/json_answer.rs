//! Structured output on the Messages API: a request naming an agent whose
//! `output_config.format` (or older `output_format`) is `{type: "json_schema",
//! schema}` (`surfaces::agents::structured`) gets the agent's answer checked
//! against the schema, corrected once, and sent whole as one `text` block holding
//! the JSON (what the Anthropic SDK's `messages.parse` reads into
//! `parsed_output`). An answer that never complies is a 502 `api_error` whose
//! message lists the violations (also under `error.violations`), with
//! `x-should-retry: false` so the SDK does not send it again.

use super::error::{ApiError, body};
use crate::agent::{ChatRequest, JsonOutput, TaskError};
use crate::hub::Caller;
use crate::llm::anthropic_wire::anthropic_usage;
use crate::surfaces::App;
use crate::surfaces::agents::structured;
use crate::surfaces::chat_metrics::ChatStream;
use crate::surfaces::respond::{self, Resp};
use http::{HeaderValue, StatusCode};
use serde_json::json;
use std::sync::Arc;

/// The agent's JSON answer to `chat` as one Messages `Message` of `model`.
pub(super) async fn json_message(
    app: &Arc<App>,
    chat: ChatRequest,
    output: JsonOutput,
    model: &str,
    caller: Caller,
    metrics: ChatStream,
) -> Result<Resp, ApiError> {
    let answer = match structured::run(app, chat, output, caller, metrics).await {
        Ok(answer) => answer,
        Err(TaskError::Start(e)) => return Err(super::agent_error(e)),
        Err(TaskError::Failed(error)) => return Err(ApiError::new(StatusCode::BAD_GATEWAY, error)),
        Err(e @ TaskError::InvalidOutput(_)) => return Ok(invalid_output(e)),
    };
    let message = json!({
        "id": crate::ids::new_id("msg"), "type": "message", "role": "assistant", "model": model,
        "content": [{ "type": "text", "text": answer.output.to_string() }],
        // As a streamed hub-tools turn says it: the step limit pauses the turn.
        "stop_reason": if answer.outcome == "max-steps" { "pause_turn" } else { "end_turn" },
        "stop_sequence": null,
        "usage": anthropic_usage(&answer.usage.unwrap_or_default()),
    });
    let mut resp = respond::json(StatusCode::OK, &message);
    resp.headers_mut()
        .insert("x-wasmhub-corrections", HeaderValue::from(answer.corrections));
    Ok(resp)
}

/// 502 in Anthropic's error shape, the violations listed in the message and
/// under `error.violations`.
fn invalid_output(e: TaskError) -> Resp {
    let mut error = body("api_error", &e.to_string());
    if let TaskError::InvalidOutput(found) = &e {
        error["error"]["violations"] = serde_json::to_value(found).expect("violations serialize");
    }
    let mut resp = respond::json(StatusCode::BAD_GATEWAY, &error);
    resp.headers_mut()
        .insert("x-should-retry", HeaderValue::from_static("false"));
    resp
}
