//! `POST /v1/agents/{name}`: one task for an agent, over plain JSON.
//!
//! The body is `{input, stream?, temperature?, top_p?, max_output_tokens?}`
//! (`input`: the task, a string). The answer is `{agent, output, finishReason,
//! usage}` (`output`: the agent's final text; `finishReason` the turn's own:
//! `stop` or `max-steps`), or with `stream: true` the turn as an AI SDK UI message
//! stream (the same chunks as `/api/chat`). An unknown agent is 404
//! `agent_not_found`; a failed turn 502 `agent_failed` with its message.

use super::turn::{Added, AnswerSink, Collected, OneOff};
use crate::agent::{Approver, ChatRequest, Sampling, Trigger, UiMessage};
use crate::config::is_agent_name;
use crate::hub::Caller;
use crate::llm::{Closed, SseSink, UiChunk, UiSink};
use crate::surfaces::App;
use crate::surfaces::body::Body;
use crate::surfaces::respond::{self, Resp};
use http::{Request, StatusCode};
use hyper::body::Incoming;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// Frames buffered towards one client before the producer waits.
const STREAM_FRAMES: usize = 16;

/// The keys the body may have.
const KEYS: [&str; 5] = ["input", "stream", "temperature", "top_p", "max_output_tokens"];

/// A checked body.
struct Task {
    input: String,
    stream: bool,
    sampling: Sampling,
}

fn invalid(message: String) -> Resp {
    respond::error(StatusCode::BAD_REQUEST, "invalid_request", message)
}

/// Reads `{input, stream?, temperature?, top_p?, max_output_tokens?}`.
fn task_of(value: Value) -> Result<Task, Resp> {
    let Value::Object(obj) = value else {
        return Err(invalid("the request body must be a JSON object".into()));
    };
    if let Some(key) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(invalid(format!(
            "unknown field {key:?}; the body takes {}",
            KEYS.join(", ")
        )));
    }
    let input = match obj.get("input") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        _ => return Err(invalid("\"input\" (the task) must be a non-empty string".into())),
    };
    let stream = match obj.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(invalid("\"stream\" must be a boolean".into())),
    };
    let sampling = super::sampling_of(&Value::Object(obj), &["max_output_tokens"])
        .map_err(|e| invalid(e.to_string()))?;
    Ok(Task {
        input,
        stream,
        sampling,
    })
}

/// `POST /v1/agents/{name}`.
pub(crate) async fn run(app: &Arc<App>, req: Request<Incoming>, caller: Caller, name: &str) -> Resp {
    if !is_agent_name(name) || super::agent_named(app, name).is_none() {
        return super::completion::agent_error(crate::agent::AgentError::UnknownAgent(name.to_string()));
    }
    let bodies = app.body_parser();
    let bytes = match bodies.read(req.into_body()).await {
        Ok(bytes) => bytes,
        Err(e) => return e.into_response(),
    };
    let parsed = match bodies
        .parse(caller.name(), bytes, |b| serde_json::from_slice::<Value>(b))
        .await
    {
        Ok(parsed) => parsed,
        Err(e) => return e.into_response(),
    };
    let task = match parsed
        .map_err(|e| invalid(format!("request body is not valid JSON: {e}")))
        .and_then(task_of)
    {
        Ok(task) => task,
        Err(resp) => return resp,
    };
    let message = json!({ "id": "task", "role": "user", "parts": [{ "type": "text", "text": task.input }] });
    let chat = ChatRequest {
        // Nobody to ask: calls wait for an operator, as REST calls do.
        approvals: Approver::Operator,
        session_id: crate::ids::new_id("agent"),
        messages: vec![serde_json::from_value::<UiMessage>(message).expect("a text message")],
        trigger: Trigger::SubmitMessage,
        message_id: None,
        model: None,
        agent: Some(name.to_string()),
        sampling: task.sampling,
    };
    let one = match OneOff::start(app, chat, caller).await {
        Ok(one) => one,
        Err(e) => return super::completion::agent_error(e),
    };
    if task.stream {
        let (tx, body) = Body::channel(STREAM_FRAMES);
        one.stream(UiStream {
            out: SseSink::new(tx),
            ended: false,
        });
        return respond::sse(body, true);
    }
    let mut answer = RestAnswer::default();
    one.collect(&mut answer).await;
    answer.into_response(name)
}

/// A collected answer.
#[derive(Default)]
struct RestAnswer {
    answer: Collected,
    ended: bool,
}

impl RestAnswer {
    fn into_response(self, agent: &str) -> Resp {
        if let Some(error) = self.answer.error {
            return respond::error(StatusCode::BAD_GATEWAY, "agent_failed", error);
        }
        let mut body = Map::new();
        body.insert("agent".into(), Value::String(agent.to_string()));
        body.insert("output".into(), Value::String(self.answer.text));
        body.insert(
            "finishReason".into(),
            Value::String(self.answer.outcome.unwrap_or_else(|| "stop".into())),
        );
        body.insert(
            "usage".into(),
            serde_json::to_value(self.answer.usage).expect("usage serializes"),
        );
        respond::json(StatusCode::OK, &Value::Object(body))
    }
}

impl UiSink for RestAnswer {
    async fn send(&mut self, chunks: &[UiChunk]) -> Result<(), Closed> {
        for c in chunks {
            if matches!(self.answer.apply(c), Some(Added::Finished | Added::Failed)) {
                self.ended = true;
            }
        }
        Ok(())
    }

    async fn keepalive(&mut self) -> Result<(), Closed> {
        Ok(())
    }

    async fn closed(&self) {
        // Nothing says a non-streamed request's client left; the provider's
        // timeouts bound the wait.
        std::future::pending().await
    }
}

impl AnswerSink for RestAnswer {
    async fn begin(&mut self) -> Result<(), Closed> {
        Ok(())
    }

    fn is_ended(&self) -> bool {
        self.ended
    }
}

/// The turn's UI chunks as they are, then `[DONE]`.
struct UiStream {
    out: SseSink,
    ended: bool,
}

impl UiSink for UiStream {
    async fn send(&mut self, chunks: &[UiChunk]) -> Result<(), Closed> {
        self.out.send(chunks).await?;
        if chunks
            .iter()
            .any(|c| matches!(c, UiChunk::Finish { .. } | UiChunk::Abort { .. }))
        {
            self.ended = true;
            self.out.done().await?;
        }
        Ok(())
    }

    async fn keepalive(&mut self) -> Result<(), Closed> {
        self.out.keepalive().await
    }

    async fn closed(&self) {
        self.out.closed().await
    }
}

impl AnswerSink for UiStream {
    async fn begin(&mut self) -> Result<(), Closed> {
        Ok(())
    }

    fn is_ended(&self) -> bool {
        self.ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_is_checked_naming_the_field() {
        let ok = task_of(json!({"input": "sum 2 and 3", "temperature": 0.1, "max_output_tokens": 20}))
            .ok()
            .unwrap();
        assert_eq!((ok.input.as_str(), ok.stream), ("sum 2 and 3", false));
        assert_eq!(ok.sampling.max_output_tokens, Some(20));
        for body in [
            json!({"input": ""}),
            json!({"input": "x", "format": "xml"}),
            json!({"input": "x", "stream": 1}),
            json!([]),
        ] {
            assert!(task_of(body).is_err());
        }
    }
}
