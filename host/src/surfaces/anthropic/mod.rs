//! The Anthropic Messages surface: `POST /v1/messages`, and `GET /v1/models` in
//! Anthropic's list shape for clients that send `anthropic-version`.
//!
//! A request is answered by one of the hub's OpenAI-compatible providers (the
//! model name routes it, as on the OpenAI proxy): [`request`] translates it into a
//! chat-completions body, the upstream always streams, and its chunks go through
//! the shared transformer (`llm::transform`) into UI chunks, which [`events`]
//! turns into Anthropic's event sequence, streamed ([`sink`]) or folded into one
//! message. With `x-wasmhub-tools: hub` and no `tools`, or a `model` that names
//! an agent (`surfaces::agents`), the agent loop answers instead ([`hub_mode`],
//! a one-off turn of `surfaces::agents::turn`): the model gets the hub's four
//! meta-tools and the hub runs them; an agent asked for JSON
//! (`output_config.format`) answers whole, checked ([`json_answer`]).
//!
//! Auth: `x-api-key` or `Authorization: Bearer`, either holding one of the hub's
//! tokens (the same decision as every surface, `surfaces::auth`). Errors use
//! Anthropic's shape ([`error`]); an upstream's error status is kept, so the SDKs
//! raise the matching error class and honour `retry-after`.

mod collect;
mod error;
mod events;
mod hub_mode;
mod json_answer;
mod request;
mod sink;

use super::App;
use super::agents::structured;
use super::agents::turn::{AnswerSink, OneOff};
use super::auth;
use super::body::Body;
use super::chat_metrics::{ChatStream, Metered};
use super::limit::{self, Surface};
use super::respond::{self, BodyError, Resp};
use super::step_accounting::StepAccounting;
use crate::agent::AgentError;
use crate::agent::counted;
use crate::hub::{Caller, Resource, Scope};
use crate::llm::stream::{SseSink, transform_events};
use crate::llm::upstream::{self, UpstreamError};
use crate::llm::{Response, Route, RouteError, StepOptions, StepSummary, StepTransformer};
use crate::telemetry::Span;
use error::ApiError;
use events::ToolMode;
use http::{HeaderMap, Request, StatusCode};
use hyper::body::Incoming;
use request::Checked;
use serde_json::{Value, json};
use sink::AnthropicSink;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

/// Frames buffered towards one client before the producer waits.
const STREAM_FRAMES: usize = 16;
/// Largest upstream error body read to build the error message.
const MAX_ERROR_BODY: usize = 1 << 20;
/// Upstream response headers passed on with an error (the SDKs honour them).
const RELAYED_HEADERS: [&str; 2] = ["retry-after", "retry-after-ms"];

/// Whether a request comes from an Anthropic client (it sends `anthropic-version`).
pub(crate) fn is_anthropic_client(headers: &HeaderMap) -> bool {
    headers.contains_key("anthropic-version")
}

/// The caller of a request: `x-api-key` first, then a bearer token; the refusal in
/// Anthropic's error shape (401 `authentication_error`, 403 `permission_error`).
async fn authenticate(app: &App, headers: &HeaderMap, peer: SocketAddr) -> Result<Caller, Resp> {
    let key = headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|k| !k.is_empty());
    let token = key.or_else(|| auth::bearer_token(headers));
    let refused = auth::authenticate(&*app.hub, token, peer, Resource::Api, Scope::Chat).await;
    refused.map_err(|refusal| {
        let message = match refusal.error {
            crate::hub::AuthError::MissingToken => {
                "this hub requires an API key: send 'x-api-key: <token>' or 'Authorization: Bearer <token>'"
                    .to_string()
            }
            crate::hub::AuthError::InvalidToken => "the API key is not valid for this hub".to_string(),
            ref other => other.to_string(),
        };
        refusal.respond(&error::body(error::error_type(refusal.status()), &message))
    })
}

/// `POST /v1/messages`.
pub(crate) async fn messages(app: &Arc<App>, req: Request<Incoming>, peer: SocketAddr) -> Resp {
    let started = Instant::now();
    let (parts, body) = req.into_parts();
    let caller = match authenticate(app, &parts.headers, peer).await {
        Ok(caller) => caller,
        Err(refused) => return refused,
    };
    let bodies = app.body_parser();
    let bytes = match bodies.read(body).await {
        Ok(bytes) => bytes,
        Err(e) => return body_error(e).into_response(),
    };
    let (value, checked) = match bodies.parse(caller.name(), bytes, request::check).await {
        Ok(Ok(ok)) => ok,
        Ok(Err(e)) => return ApiError::invalid(e.to_string()).into_response(),
        Err(e) => return body_error(e).into_response(),
    };
    let agent = super::agents::agent_named(app, &checked.model);
    let mode = match tool_mode(&parts.headers, &checked, agent.as_deref()) {
        Ok(mode) => mode,
        Err(e) => return e.into_response(),
    };
    // The surface's turn (`concurrency.anthropic`), held until the answer is sent;
    // a refusal is a 429 `rate_limit_error` in Anthropic's shape.
    let permit = match app.limits.enter(Surface::Anthropic).await {
        Ok(permit) => permit,
        Err(refusal) => {
            let resp = ApiError::new(StatusCode::TOO_MANY_REQUESTS, refusal.to_string()).into_response();
            return refusal.with_retry_after(resp);
        }
    };
    // Answers are counted in the chat metrics as `surface="anthropic"`.
    let metrics = ChatStream::new("anthropic", started);
    let result = match mode {
        ToolMode::Client => forward(app, &value, &checked, &caller, metrics).await,
        ToolMode::Hub => run_agent(app, &value, &checked, agent, caller, metrics).await,
    };
    limit::held(result.unwrap_or_else(ApiError::into_response), permit)
}

fn body_error(e: BodyError) -> ApiError {
    ApiError::new(e.status(), e.to_string())
}

/// Who runs the tools: the hub when `model` names an agent or `x-wasmhub-tools:
/// hub` asks for it (then the request may not bring tools of its own), else the
/// client.
fn tool_mode(headers: &HeaderMap, checked: &Checked, agent: Option<&str>) -> Result<ToolMode, ApiError> {
    if let Some(agent) = agent {
        if checked.has_tools {
            return Err(ApiError::invalid(format!(
                "tools: the agent {agent:?} runs the hub's tools itself; send no tools of your own"
            )));
        }
        return Ok(ToolMode::Hub);
    }
    let Some(value) = headers.get(hub_mode::HEADER) else {
        return Ok(ToolMode::Client);
    };
    match value.to_str().map(str::trim) {
        Ok(v) if v.eq_ignore_ascii_case(hub_mode::HUB) && checked.has_tools => {
            Err(ApiError::invalid(format!(
                "tools: a request with {}: {} may not send tools; the hub offers its own four meta-tools",
                hub_mode::HEADER,
                hub_mode::HUB
            )))
        }
        Ok(v) if v.eq_ignore_ascii_case(hub_mode::HUB) => Ok(ToolMode::Hub),
        _ => Err(ApiError::invalid(format!(
            "the {} header must be \"{}\" (or be left out)",
            hub_mode::HEADER,
            hub_mode::HUB
        ))),
    }
}

/// Client tools: one model call through the route's provider, counted in the
/// chat metrics (`metrics`) and the GenAI client metrics.
async fn forward(
    app: &Arc<App>,
    value: &Value,
    checked: &Checked,
    caller: &Caller,
    mut metrics: ChatStream,
) -> Result<Resp, ApiError> {
    let started = Instant::now();
    let accounting = StepAccounting::start(app, caller);
    let route = app.llm.route(&checked.model).map_err(route_error)?;
    let mut upstream_body =
        request::to_openai(value, &route.model).map_err(|e| ApiError::invalid(e.to_string()))?;
    crate::llm::openai::prepare_stream_body(&mut upstream_body, &route.model);
    metrics.provider(&route.provider.config.name);
    // The model call's `chat MODEL` span, the provider's request under it.
    let mut span = crate::llm::chat_span(std::slice::from_ref(&route), &upstream_body);
    let no_headers = HeaderMap::new();
    let call = app.llm.chat(&route, &upstream_body, &no_headers);
    let resp = match crate::telemetry::within(span.context().cloned(), call).await {
        Ok(resp) if resp.status.is_success() => resp,
        Ok(resp) => {
            metrics.refused(&route, started);
            span.fail("upstream_error", "the provider refused the request");
            return Err(upstream_status(&route, resp).await);
        }
        Err(e) => {
            metrics.refused(&route, started);
            span.fail("upstream_error", "the provider could not be reached");
            return Err(upstream_error(&e));
        }
    };
    if !checked.stream {
        let sink = AnthropicSink::collect(ToolMode::Client, &checked.model);
        let mut sink = Metered::new(sink, metrics);
        let step = relay_step(&route, resp, &mut sink).await;
        record_model_call(&route, started, &step, &mut sink, span);
        if let Ok(summary) = step {
            let output = || counted::summary_output(&summary);
            accounting.done(&route, summary.usage, &upstream_body, output);
        }
        return collected(sink.into_inner());
    }
    let (tx, body) = Body::channel(STREAM_FRAMES);
    let sink = AnthropicSink::stream(ToolMode::Client, &checked.model, SseSink::new(tx));
    let mut sink = Metered::new(sink, metrics);
    tokio::spawn(async move {
        // `Err(Closed)`: the client left; returning drops the upstream body.
        let step = relay_step(&route, resp, &mut sink).await;
        record_model_call(&route, started, &step, &mut sink, span);
        if let Ok(summary) = step {
            let output = || counted::summary_output(&summary);
            accounting.done(&route, summary.usage, &upstream_body, output);
        }
    });
    Ok(respond::sse(body, false))
}

/// A forwarded step's unknown upstream events on its chat stream, the step in
/// the GenAI client metrics, and its end on its `chat MODEL` span.
fn record_model_call<S>(
    route: &Route,
    started: Instant,
    step: &Result<StepSummary, crate::llm::Closed>,
    sink: &mut Metered<S>,
    mut span: Span,
) {
    let (usage, error) = match step {
        Ok(summary) => {
            sink.stream().unknown_events(summary.unknown_events);
            crate::llm::end_chat(&mut span, summary);
            (summary.usage, summary.error.as_ref().map(|_| "upstream_error"))
        }
        Err(_) => {
            span.fail("client_closed", "the client went away");
            (None, Some("client_closed"))
        }
    };
    let provider = &route.provider.config.name;
    crate::llm::client_metrics::record(provider, &route.model, started.elapsed(), usage.as_ref(), error);
}

/// Streams one upstream answer through the transformer into `sink`.
async fn relay_step<S: AnswerSink>(
    route: &Route,
    resp: Response,
    sink: &mut S,
) -> Result<StepSummary, crate::llm::Closed> {
    sink.begin().await?;
    let opts = StepOptions {
        emit_start: false,
        ..StepOptions::default()
    };
    let mut t = StepTransformer::new(opts);
    t.set_provider(&route.provider.config);
    let mut out = Vec::new();
    t.begin(&mut out);
    transform_events(&route.provider, resp.body, &mut t, sink).await?;
    let summary = t.finish(&mut out);
    sink.send(&out).await?;
    Ok(summary)
}

/// The answer of a collecting sink: the message, or a 502 when the upstream failed
/// part way.
fn collected(sink: AnthropicSink) -> Result<Resp, ApiError> {
    match sink.into_message() {
        Some(Ok(message)) => Ok(respond::json(StatusCode::OK, &message)),
        Some(Err(e)) => Err(ApiError::new(StatusCode::BAD_GATEWAY, e.to_string())),
        None => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "a streaming answer has no message",
        )),
    }
}

/// Hub tools: a turn of the agent loop (the agent `model` names, else the default
/// one) in a session of its own, deleted after. The request's `max_tokens`,
/// `temperature` and `top_p` go over the agent's within the operator's limits.
async fn run_agent(
    app: &Arc<App>,
    value: &Value,
    checked: &Checked,
    agent: Option<String>,
    caller: Caller,
    metrics: ChatStream,
) -> Result<Resp, ApiError> {
    let mut chat =
        hub_mode::chat_request(value, &checked.model).map_err(|e| ApiError::invalid(e.to_string()))?;
    chat.sampling =
        super::agents::sampling_of(value, &["max_tokens"]).map_err(|e| ApiError::invalid(e.to_string()))?;
    let asked = structured::anthropic_format(value).map_err(|e| ApiError::invalid(e.to_string()))?;
    if asked != structured::Asked::Text {
        let output = json_output(app, asked, agent.as_deref(), checked)?;
        chat.model = None;
        chat.agent = agent;
        return json_answer::json_message(app, chat, output, &checked.model, caller, metrics).await;
    }
    if let Some(agent) = agent {
        chat.model = None;
        chat.agent = Some(agent);
    }
    let one = OneOff::start(app, chat, caller).await.map_err(agent_error)?;
    if !checked.stream {
        let mut sink = Metered::new(AnthropicSink::collect(ToolMode::Hub, &checked.model), metrics);
        one.collect(&mut sink).await;
        return collected(sink.into_inner());
    }
    let (tx, body) = Body::channel(STREAM_FRAMES);
    let sink = AnthropicSink::stream(ToolMode::Hub, &checked.model, SseSink::new(tx));
    one.stream(Metered::new(sink, metrics));
    Ok(respond::sse(body, false))
}

/// The JSON answer a request asking for structured output gets: only an agent
/// gives one, and only whole (not streamed).
fn json_output(
    app: &App,
    asked: structured::Asked,
    agent: Option<&str>,
    checked: &Checked,
) -> Result<crate::agent::JsonOutput, ApiError> {
    const FIELD: &str = "output_config.format";
    let Some(agent) = agent else {
        return Err(ApiError::invalid(format!(
            "{FIELD}: structured output comes from an agent; name one as model (GET /v1/models lists them)"
        )));
    };
    if checked.stream {
        return Err(ApiError::invalid(format!("{FIELD}: {}", structured::NO_STREAM)));
    }
    let Some(profile) = app.agent.profiles().get(agent).cloned() else {
        return Err(agent_error(AgentError::UnknownAgent(agent.to_string())));
    };
    match asked.output(&profile, FIELD) {
        Ok(Some(output)) => Ok(output),
        Ok(None) => Err(ApiError::invalid(format!("{FIELD}: no JSON format asked"))),
        Err(e) => Err(ApiError::invalid(e.to_string())),
    }
}

/// `GET /v1/models` for Anthropic clients: the same agents and models as the
/// OpenAI list.
pub(crate) async fn models(app: &Arc<App>, req: &Request<Incoming>, peer: SocketAddr) -> Resp {
    if let Err(refused) = authenticate(app, req.headers(), peer).await {
        return refused;
    }
    if app.llm.providers().is_empty() {
        return route_error(RouteError::NoProviders).into_response();
    }
    let list = super::agents::model_list(app).await;
    let empty = Vec::new();
    let data: Vec<Value> = list["data"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .map(|m| {
            let id = m["id"].as_str().unwrap_or_default();
            let created_ms = m["created"].as_u64().unwrap_or(0).saturating_mul(1000);
            json!({
                "type": "model", "id": id, "display_name": id,
                "created_at": crate::logging::Rfc3339(created_ms).to_string(),
            })
        })
        .collect();
    let (first, last) = (
        data.first().map(|m| m["id"].clone()),
        data.last().map(|m| m["id"].clone()),
    );
    respond::json(
        StatusCode::OK,
        &json!({ "data": data, "has_more": false, "first_id": first, "last_id": last }),
    )
}

fn route_error(e: RouteError) -> ApiError {
    let status = match e {
        RouteError::NoProviders => StatusCode::SERVICE_UNAVAILABLE,
        RouteError::UnknownModel { .. } => StatusCode::NOT_FOUND,
    };
    ApiError::new(status, e.to_string())
}

pub(super) fn agent_error(e: AgentError) -> ApiError {
    if let AgentError::Route(r) = &e {
        return route_error(r.clone());
    }
    let (status, _) = crate::surfaces::chat::agent_status(&e);
    ApiError::new(status, e.to_string())
}

fn upstream_error(e: &UpstreamError) -> ApiError {
    let status = match e {
        UpstreamError::MissingKey(_) => StatusCode::SERVICE_UNAVAILABLE,
        UpstreamError::Request { .. } => StatusCode::BAD_REQUEST,
        UpstreamError::Send { error, .. } => error.status(),
    };
    ApiError::new(status, e.to_string())
}

/// An upstream's error answer: its status (so the SDK raises the matching class),
/// its message, and its retry hints.
async fn upstream_status(route: &Route, resp: Response) -> ApiError {
    let status = resp.status;
    let mut headers = HeaderMap::new();
    for name in RELAYED_HEADERS {
        if let Some(v) = resp.headers.get(name) {
            headers.insert(name, v.clone());
        }
    }
    let message = match resp.body.collect(MAX_ERROR_BODY).await {
        Ok(body) => upstream::error_message(&body),
        Err(e) => e.to_string(),
    };
    let mut e = ApiError::new(
        status,
        format!(
            "provider {:?} answered {status}: {message}",
            route.provider.config.name
        ),
    );
    e.headers = headers;
    e
}
