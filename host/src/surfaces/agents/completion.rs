//! An agent's turn answered in OpenAI's Chat Completions shape, for a request
//! whose `model` names an agent: `chat.completion.chunk` events (then `[DONE]`)
//! for a streamed request, one `chat.completion` object otherwise.
//!
//! Only the agent's text reaches the client: the tool calls it makes run inside
//! the hub and are not shown as `tool_calls` (a strict client would take them as
//! calls it must run, and `finish_reason: "tool_calls"` as its turn to answer).
//! The texts of successive steps are joined by a blank line. A turn that reaches
//! its step limit finishes with `"length"`; one that fails ends a stream with one
//! OpenAI error frame and no `[DONE]` (the SDKs raise it) and a collected answer
//! with 502. The calls are in `GET /api/calls` and the usage, summed over the
//! steps, in `usage` and `GET /api/accounting`. With a JSON `response_format`
//! the answer is checked first and sent whole (`structured`).

use super::turn::{AnswerSink, OneOff};
use super::{openai_request, structured};
use crate::agent::{Added, Collected};
use crate::agent::{AgentError, ChatRequest, JsonOutput};
use crate::hub::Caller;
use crate::llm::{Closed, SseSink, UiChunk, UiSink};
use crate::surfaces::App;
use crate::surfaces::body::Body;
use crate::surfaces::chat_metrics::{ChatStream, Metered};
use crate::surfaces::respond::{self, Resp};
use http::{HeaderValue, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;

/// Frames buffered towards one client before the producer waits.
const STREAM_FRAMES: usize = 16;

/// `POST /v1/chat/completions` with an agent's name as `model`.
/// A text answer is counted in the chat metrics (`surface="openai"`, the request
/// started at `started`).
pub(crate) async fn answer(
    app: &Arc<App>,
    value: &Value,
    agent: &str,
    caller: &Caller,
    started: std::time::Instant,
) -> Resp {
    let chat = match openai_request::chat_request(value, agent) {
        Ok(chat) => chat,
        Err(e) => return respond::error(StatusCode::BAD_REQUEST, "invalid_request", e.to_string()),
    };
    let stream = value.get("stream") == Some(&Value::Bool(true));
    let include_usage = value.pointer("/stream_options/include_usage") == Some(&Value::Bool(true));
    let Some(profile) = app.agent.profiles().get(agent).cloned() else {
        return agent_error(AgentError::UnknownAgent(agent.to_string()));
    };
    let output = structured::openai_format(value).and_then(|asked| asked.output(&profile, "response_format"));
    let mut resp = match output {
        Err(e) => return respond::error(StatusCode::BAD_REQUEST, "invalid_request", e.to_string()),
        Ok(Some(_)) if stream => {
            let message = format!("response_format: {}", structured::NO_STREAM);
            return respond::error(StatusCode::BAD_REQUEST, "invalid_request", message);
        }
        Ok(Some(output)) => {
            let metrics = ChatStream::new("openai", started);
            json_answer(app, chat, output, agent, caller, metrics).await
        }
        Ok(None) => {
            let metrics = ChatStream::new("openai", started);
            text_answer(app, chat, agent, caller, (stream, include_usage), metrics).await
        }
    };
    if let Ok(name) = HeaderValue::try_from(agent) {
        resp.headers_mut().insert("x-wasmhub-agent", name);
    }
    resp
}

/// The agent's answer as one JSON value, checked (and corrected once) before it
/// is sent as the message's content; `x-wasmhub-corrections` says whether it was.
async fn json_answer(
    app: &Arc<App>,
    chat: ChatRequest,
    output: JsonOutput,
    agent: &str,
    caller: &Caller,
    metrics: ChatStream,
) -> Resp {
    match structured::run(app, chat, output, caller.clone(), metrics).await {
        Ok(answer) => {
            let mut sink = CompletionSink::new(agent, true, None);
            sink.answer.text = answer.output.to_string();
            sink.answer.usage = answer.usage;
            sink.finish = Some(if answer.outcome == "max-steps" {
                "length"
            } else {
                "stop"
            });
            let mut resp = sink.into_response();
            resp.headers_mut()
                .insert("x-wasmhub-corrections", HeaderValue::from(answer.corrections));
            resp
        }
        Err(e) => structured::task_error(e),
    }
}

/// The agent's text answer, streamed or collected.
async fn text_answer(
    app: &Arc<App>,
    chat: ChatRequest,
    agent: &str,
    caller: &Caller,
    (stream, include_usage): (bool, bool),
    metrics: ChatStream,
) -> Resp {
    let one = match OneOff::start(app, chat, caller.clone()).await {
        Ok(one) => one,
        Err(e) => return agent_error(e),
    };
    if stream {
        let (tx, body) = Body::channel(STREAM_FRAMES);
        let sink = CompletionSink::new(agent, include_usage, Some(SseSink::new(tx)));
        one.stream(Metered::new(sink, metrics));
        respond::sse(body, false)
    } else {
        let mut sink = Metered::new(CompletionSink::new(agent, true, None), metrics);
        one.collect(&mut sink).await;
        sink.into_inner().into_response()
    }
}

/// A turn that could not start, in the hub's error shape.
pub(crate) fn agent_error(e: AgentError) -> Resp {
    let (status, code) = crate::surfaces::chat::agent_status(&e);
    respond::error(status, code, e.to_string())
}

/// The answer being built: streamed as chunks, or collected into one object.
pub(crate) struct CompletionSink {
    id: String,
    model: String,
    created: u64,
    include_usage: bool,
    /// `None`: collecting.
    out: Option<SseSink>,
    answer: Collected,
    finish: Option<&'static str>,
    ended: bool,
}

impl CompletionSink {
    fn new(agent: &str, include_usage: bool, out: Option<SseSink>) -> CompletionSink {
        CompletionSink {
            id: crate::ids::new_id("chatcmpl"),
            model: agent.to_string(),
            created: crate::clock::now_ms() / 1000,
            include_usage,
            out,
            answer: Collected::default(),
            finish: None,
            ended: false,
        }
    }

    fn chunk(&self, delta: Value, finish: Option<&str>) -> Value {
        json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "choices": [{ "index": 0, "delta": delta, "finish_reason": finish, "logprobs": null }],
        })
    }

    fn openai_usage(&self) -> Value {
        match &self.answer.usage {
            Some(u) => json!({
                "prompt_tokens": u.input_tokens, "completion_tokens": u.output_tokens,
                "total_tokens": u.total_tokens,
            }),
            None => Value::Null,
        }
    }

    /// The frames `c` adds to a stream.
    fn apply(&mut self, c: &UiChunk, frames: &mut Vec<Value>) {
        match self.answer.apply(c) {
            Some(Added::Text(text)) => frames.push(self.chunk(json!({ "content": text }), None)),
            Some(Added::Failed) => self.ended = true,
            Some(Added::Finished) => {
                let max_steps = self.answer.outcome.as_deref() == Some("max-steps");
                self.finish = Some(if max_steps { "length" } else { "stop" });
                frames.push(self.chunk(json!({}), self.finish));
                if self.include_usage {
                    frames.push(json!({
                        "id": self.id, "object": "chat.completion.chunk", "created": self.created,
                        "model": self.model, "choices": [], "usage": self.openai_usage(),
                    }));
                }
                self.ended = true;
            }
            None => {}
        }
    }

    /// The collected answer: the `chat.completion`, or 502 when the turn failed.
    fn into_response(self) -> Resp {
        if let Some(error) = &self.answer.error {
            return respond::error(StatusCode::BAD_GATEWAY, "agent_failed", error.clone());
        }
        respond::json(
            StatusCode::OK,
            &json!({
                "id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
                "choices": [{
                    "index": 0, "finish_reason": self.finish.unwrap_or("stop"), "logprobs": null,
                    "message": { "role": "assistant", "content": self.answer.text, "refusal": null },
                }],
                "usage": self.openai_usage(),
            }),
        )
    }
}

impl UiSink for CompletionSink {
    async fn send(&mut self, chunks: &[UiChunk]) -> Result<(), Closed> {
        let mut frames = Vec::new();
        let was_ended = self.ended;
        for c in chunks {
            if !self.ended {
                self.apply(c, &mut frames);
            }
        }
        let Some(out) = &mut self.out else {
            return Ok(());
        };
        for frame in &frames {
            out.send_json(frame).await?;
        }
        if self.ended && !was_ended {
            match &self.answer.error {
                Some(message) => {
                    let frame = json!({"error": {"message": message, "type": "agent_error", "param": null, "code": "agent_failed"}});
                    out.send_json(&frame).await?;
                }
                None => out.done().await?,
            }
        }
        Ok(())
    }

    async fn keepalive(&mut self) -> Result<(), Closed> {
        match &mut self.out {
            Some(out) => out.keepalive().await,
            None => Ok(()),
        }
    }

    async fn closed(&self) {
        match &self.out {
            Some(out) => out.closed().await,
            // Nothing says a non-streamed request's client left; the provider's
            // timeouts bound the wait.
            None => std::future::pending().await,
        }
    }
}

impl AnswerSink for CompletionSink {
    async fn begin(&mut self) -> Result<(), Closed> {
        let first = self.chunk(json!({ "role": "assistant", "content": "" }), None);
        match &mut self.out {
            Some(out) => out.send_json(&first).await,
            None => Ok(()),
        }
    }

    fn is_ended(&self) -> bool {
        self.ended
    }
}
