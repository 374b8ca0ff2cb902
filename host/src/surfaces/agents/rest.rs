//! `POST /v1/agents/{name}`: one task for an agent, over plain JSON.
//!
//! The body is `{input, format?, schema?, stream?, temperature?, top_p?,
//! max_output_tokens?}` (`input`: the task, a string). The answer is `{agent,
//! output, finishReason, usage, corrections}` (`output`: the agent's final text,
//! or with `format: "json"` its answer as JSON satisfying `schema`, else the
//! profile's `output_schema`; `finishReason` the turn's own: `stop` or
//! `max-steps`), or with `stream: true` the turn as an AI SDK UI message stream
//! (the same chunks as `/api/chat`). A JSON answer that breaks its schema is sent
//! back once with the violations (`agent::structured`, `corrections: 1`), then
//! fails with 502 `invalid_output` listing them. An unknown agent is 404
//! `agent_not_found`; a failed turn 502 `agent_failed` with its message.

use super::turn::{AnswerSink, OneOff};
use crate::agent::{
    AgentError, Approver, ChatRequest, JsonOutput, Sampling, Task, TaskAnswer, Trigger, UiMessage,
};
use crate::config::is_agent_name;
use crate::hub::Caller;
use crate::llm::{Closed, SseSink, UiChunk, UiSink};
use crate::surfaces::App;
use crate::surfaces::body::Body;
use crate::surfaces::chat_metrics::{ChatStream, Metered};
use crate::surfaces::respond::{self, Resp};
use http::{Request, StatusCode};
use hyper::body::Incoming;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// Frames buffered towards one client before the producer waits.
const STREAM_FRAMES: usize = 16;

/// The keys the body may have.
const KEYS: [&str; 7] = [
    "input",
    "format",
    "schema",
    "stream",
    "temperature",
    "top_p",
    "max_output_tokens",
];

/// A checked body.
struct TaskBody {
    input: String,
    /// `format: "json"`: the answer must be JSON.
    json: bool,
    schema: Option<Value>,
    stream: bool,
    sampling: Sampling,
}

fn invalid(message: String) -> Resp {
    respond::error(StatusCode::BAD_REQUEST, "invalid_request", message)
}

/// Reads `{input, format?, schema?, stream?, temperature?, top_p?, max_output_tokens?}`.
fn task_of(value: Value) -> Result<TaskBody, Resp> {
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
    let json = match obj.get("format") {
        None | Some(Value::Null) => false,
        Some(Value::String(f)) if f == "text" => false,
        Some(Value::String(f)) if f == "json" => true,
        Some(_) => return Err(invalid("\"format\" must be \"text\" or \"json\"".into())),
    };
    let schema = obj.get("schema").filter(|s| !s.is_null()).cloned();
    if schema.is_some() && !json {
        return Err(invalid("\"schema\" goes with \"format\": \"json\"".into()));
    }
    let stream = match obj.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(invalid("\"stream\" must be a boolean".into())),
    };
    if stream && json {
        return Err(invalid(format!("\"stream\": {}", super::structured::NO_STREAM)));
    }
    let sampling = super::sampling_of(&Value::Object(obj), &["max_output_tokens"])
        .map_err(|e| invalid(e.to_string()))?;
    Ok(TaskBody {
        input,
        json,
        schema,
        stream,
        sampling,
    })
}

/// `POST /v1/agents/{name}`.
pub(crate) async fn run(app: &Arc<App>, req: Request<Incoming>, caller: Caller, name: &str) -> Resp {
    let started = std::time::Instant::now();
    let profile = match is_agent_name(name)
        .then(|| app.agent.profiles().get(name).cloned())
        .flatten()
    {
        Some(profile) => profile,
        None => return super::completion::agent_error(AgentError::UnknownAgent(name.to_string())),
    };
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
    let output = match task.json {
        false => None,
        true => match JsonOutput::new(task.schema.clone().or_else(|| profile.output_schema.clone())) {
            Ok(output) => Some(output),
            Err(e) => return invalid(e.to_string()),
        },
    };
    if task.stream {
        return stream(app, caller, name, task, started).await;
    }
    let job = Task {
        agent: name.to_string(),
        messages: Task::messages_of(&task.input),
        sampling: task.sampling,
        output,
        parent: None,
        cancel: None,
        surface: "agents",
    };
    let metrics = ChatStream::new("agents", started).agent_task(&app.agent, name);
    let answer = app.agent.run_task(job, caller).await;
    metrics.answered(&answer);
    match answer {
        Ok(answer) => answered(name, answer),
        Err(e) => super::structured::task_error(e),
    }
}

/// The task's turn as a UI message stream, counted in the chat metrics
/// (`surface="agents"`).
async fn stream(
    app: &Arc<App>,
    caller: Caller,
    name: &str,
    task: TaskBody,
    started: std::time::Instant,
) -> Resp {
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
        output: None,
        parent: None,
        surface: "agents",
    };
    let one = match OneOff::start(app, chat, caller).await {
        Ok(one) => one,
        Err(e) => return super::completion::agent_error(e),
    };
    let (tx, body) = Body::channel(STREAM_FRAMES);
    let sink = UiStream {
        out: SseSink::new(tx),
        ended: false,
    };
    one.stream(Metered::new(sink, ChatStream::new("agents", started)));
    respond::sse(body, true)
}

/// The answer's body: `{agent, output, finishReason, usage, corrections}`.
fn answered(agent: &str, answer: TaskAnswer) -> Resp {
    let mut body = Map::new();
    body.insert("agent".into(), Value::String(agent.to_string()));
    body.insert("output".into(), answer.output);
    body.insert("finishReason".into(), Value::String(answer.outcome));
    body.insert(
        "usage".into(),
        serde_json::to_value(answer.usage).expect("usage serializes"),
    );
    body.insert("corrections".into(), Value::from(answer.corrections));
    respond::json(StatusCode::OK, &Value::Object(body))
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
        let json = task_of(json!({"input": "x", "format": "json", "schema": {"type": "object"}}))
            .ok()
            .unwrap();
        assert!(json.json && json.schema.is_some());
        for body in [
            json!({"input": ""}),
            json!({"input": "x", "format": "xml"}),
            json!({"input": "x", "stream": 1}),
            json!({"input": "x", "format": "json", "stream": true}),
            json!({"input": "x", "schema": {}}),
            json!([]),
        ] {
            assert!(task_of(body).is_err());
        }
    }
}
