//! The OpenAI-compatible proxy (`POST /v1/chat/completions`, `GET /v1/models`) and
//! the same call answered as an AI SDK UI message stream
//! (`POST /api/ui/chat/completions`).
//!
//! The proxy passes the client's body through unchanged except for `model` (the
//! `provider/` prefix removed), injects the provider's key and relays upstream
//! answers with their status and body. Streams are re-framed event by event (the
//! data of every event byte for byte; upstream comments dropped) so the hub can add
//! keepalive comments between events and stop the moment the client goes away.
//! A model with several targets (`[[models]]`) is tried target by target
//! (`llm::route`); `x-wasmhub-target` names the one that answered.
//!
//! An upstream answer that does not arrive whole (`llm::terminal`: a stream whose
//! body ends before `[DONE]` or a finish reason, a torn or malformed event, a
//! broken read) is never passed off as finished: a relayed stream ends with one
//! OpenAI error frame (`{"error": {message, type, code}}`) and no `[DONE]`, which
//! the `openai` SDKs raise as an `APIError`; a non-streamed answer is a 502.
//!
//! Error choices: hub-side problems (bad body, unknown model, no provider, missing
//! key) are the hub's JSON errors with a status. On the UI endpoint an upstream
//! failure arrives inside the stream as an `error` chunk (then `finish`), the same
//! way a mid-stream failure does, so `useChat` shows the provider's message.

use super::App;
use super::body::Body;
use super::chat_metrics::{ChatStream, Metered};
use super::limit::Surface;
use super::respond::{self, Resp};
use super::step_accounting::{self, StepAccounting};
use crate::agent::counted;
use crate::hub::Caller;
use crate::llm::openai::ChatChunk;
use crate::llm::openai::{self, BadRequest};
use crate::llm::route::{RelayBody, RelayError, Relayed};
use crate::llm::stream::{Closed, EventReader, SseSink, keepalive_while};
use crate::llm::terminal::{Read, Terminal, Unfinished};
use crate::llm::upstream::{self, UpstreamError};
use crate::llm::{RelayedAnswer, Route, RouteError, StepOptions, Usage};
use crate::sse::OwnedEvent;
use crate::telemetry::Span;
use http::{HeaderValue, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Frames buffered towards one client before the producer waits (each at most
/// `stream::MAX_FRAME` bytes, so at most 1 MiB per stream).
const STREAM_FRAMES: usize = 16;
/// Upstream response headers worth passing on to the client.
const RELAYED_HEADERS: [&str; 4] = [
    "retry-after",
    "retry-after-ms",
    "x-request-id",
    "openai-processing-ms",
];

/// `POST /v1/chat/completions`: relayed to the model's provider, or answered by
/// the agent loop when `model` names an agent (`surfaces::agents::completion`).
pub(crate) async fn chat_completions(app: &Arc<App>, req: Request<Incoming>, caller: &Caller) -> Resp {
    let started = Instant::now();
    let (parts, body) = req.into_parts();
    let value = match read_body(app, caller, body).await {
        Ok(value) => value,
        Err(resp) => return resp,
    };
    let agent = openai::requested_model(&value)
        .ok()
        .and_then(|model| super::agents::agent_named(app, model));
    if let Some(agent) = agent {
        let answer = super::agents::completion::answer(app, &value, &agent, caller, started);
        return app.limits.serve(Surface::Proxy, answer).await;
    }
    let targets = match resolve(app, &value) {
        Ok(targets) => targets,
        Err(resp) => return resp,
    };
    app.limits
        .serve(
            Surface::Proxy,
            relay(app, &parts.headers, targets, value, caller, started),
        )
        .await
}

/// Sends a checked request to its targets in order and relays the answer; the
/// answer is counted in the chat metrics (`surface="openai"`) and the GenAI client
/// metrics.
async fn relay(
    app: &Arc<App>,
    headers: &http::HeaderMap,
    targets: Vec<Route>,
    value: Value,
    caller: &Caller,
    started: Instant,
) -> Resp {
    let accounting = StepAccounting::start(app, caller);
    let forwarded = upstream::forwarded_headers(headers);
    let mut metrics = ChatStream::new("openai", started);
    let first = &targets[0];
    metrics.provider(&first.provider.config.name);
    // The model call's `chat MODEL` span, the providers' requests under it.
    let mut span = crate::llm::chat_span(&targets, &value);
    let chain = app.llm.relay_chain(&targets, &value, &forwarded);
    let relayed = match crate::telemetry::within(span.context().cloned(), chain).await {
        Ok(relayed) => relayed,
        Err(e) => {
            metrics.refused(first, started);
            span.fail("upstream_error", "no target answered");
            return relay_error(e);
        }
    };
    let mut answer = RelayedAnswer::new(&span);
    let Relayed {
        route,
        status,
        headers,
        body,
    } = relayed;
    let (first, reader) = match body {
        RelayBody::Whole(bytes) => {
            // Errors, non-streamed answers, and servers that ignored `stream: true`.
            let usage = status.is_success().then(|| usage_in(&bytes)).flatten();
            if status.is_success() {
                let output = || step_accounting::answer_output(&bytes);
                accounting.done(&route, usage, &value, output);
                metrics.first_byte();
            } else {
                metrics.error();
            }
            metrics.provider(&route.provider.config.name);
            metrics.ended(false);
            let error = (!status.is_success()).then_some("upstream_error");
            answer.whole(&bytes);
            crate::llm::end_relay(&mut span, &route, usage.as_ref(), &answer, error);
            let provider = &route.provider.config.name;
            crate::llm::client_metrics::record(
                provider,
                &route.model,
                started.elapsed(),
                usage.as_ref(),
                error,
            );
            let mut out = Response::new(Body::full(bytes));
            *out.status_mut() = status;
            let ct = headers
                .get(header::CONTENT_TYPE)
                .cloned()
                .unwrap_or(HeaderValue::from_static("application/json"));
            out.headers_mut().insert(header::CONTENT_TYPE, ct);
            relay_headers(&headers, &route, &mut out);
            return out;
        }
        RelayBody::Stream { first, reader } => (first, reader),
    };
    let (tx, body) = Body::channel(STREAM_FRAMES);
    let mut out = respond::sse(body, false);
    relay_headers(&headers, &route, &mut out);
    metrics.provider(&route.provider.config.name);
    let relayed = Relaying {
        route,
        request: value,
        accounting,
        metrics,
        started,
        span,
        answer,
    };
    tokio::spawn(relay_stream(relayed, first, reader, SseSink::new(tx)));
    out
}

/// A hub-side or upstream failure before any answer was relayed.
fn relay_error(e: RelayError) -> Resp {
    match e {
        RelayError::Upstream(e) => call_error(e),
        RelayError::Body { route, error } => {
            let message = format!("provider {:?}: {error}", route.provider.config.name);
            respond::error(StatusCode::BAD_GATEWAY, error.code(), message)
        }
        RelayError::NoTargets => respond::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "no_providers",
            "the model has no targets",
        ),
    }
}

/// A stream being relayed: its target and request, and what counts it at its end
/// (its span ends with it).
struct Relaying {
    route: Route,
    request: Value,
    accounting: StepAccounting,
    metrics: ChatStream,
    started: Instant,
    span: Span,
    answer: RelayedAnswer,
}

impl Relaying {
    /// Counts the relayed stream: its usage, the chat metrics (ended by the client
    /// when `client_left`), the GenAI client metrics; `output` is what the answer
    /// said, counted when the provider reported no usage.
    fn done(mut self, usage: Option<Usage>, output: String, end: &Terminal, failed: bool, client_left: bool) {
        self.accounting.done(&self.route, usage, &self.request, || output);
        self.metrics.unknown_events(end.skipped());
        if failed {
            self.metrics.error();
        }
        self.metrics.ended(client_left);
        let error = if client_left {
            Some("client_closed")
        } else {
            failed.then_some("upstream_error")
        };
        crate::llm::end_relay(&mut self.span, &self.route, usage.as_ref(), &self.answer, error);
        let (provider, model) = (&self.route.provider.config.name, &self.route.model);
        crate::llm::client_metrics::record(provider, model, self.started.elapsed(), usage.as_ref(), error);
    }
}

/// Relays a stream's events (`first` already read) until it ends or the client
/// leaves. A stream that does not reach its end (`llm::terminal`: cut, torn or
/// malformed, broken) ends with an OpenAI error frame and no `[DONE]`, so SDK
/// clients raise instead of returning a truncated answer; the event that is not a
/// JSON chunk is not relayed.
async fn relay_stream(
    mut relaying: Relaying,
    first: Option<OwnedEvent>,
    mut reader: Box<EventReader>,
    mut sink: SseSink,
) {
    let provider = relaying.route.provider.clone();
    let interval = Duration::from_millis(provider.config.keepalive_ms.max(1));
    let mut end = Terminal::new(provider.config.max_malformed_chunks);
    let mut usage = None;
    let mut output = String::new();
    let mut errored = false;
    let mut pending = first;
    let failure = loop {
        let event = match pending.take() {
            Some(event) => event,
            // `Err(Closed)`: the client left; leaving drops the upstream body.
            None => match keepalive_while(&mut sink, interval, reader.next()).await {
                Err(Closed) => return relaying.done(usage, output, &end, errored, true),
                Ok(Ok(Some(event))) => event,
                Ok(Ok(None)) => break end.at_end().err(),
                Ok(Err(e)) => break Some(Unfinished::Broken(e)),
            },
        };
        let mut chunk = ChatChunk::default();
        match end.read(&event.data, &mut chunk) {
            Ok(Read::Chunk) => {
                end.see(&chunk);
                relaying.answer.see(&chunk);
                usage = chunk.usage().or(usage);
                step_accounting::chunk_output(&chunk, &mut output);
                errored |= chunk.error.is_some();
            }
            Ok(Read::Done) => {}
            // A provider's glitch: not relayed (a client's SDK would choke on it).
            Ok(Read::Skipped) => continue,
            Err(e) => break Some(e),
        }
        if sink.send_event(&event).await.is_err() {
            return relaying.done(usage, output, &end, errored, true);
        }
        relaying.metrics.first_byte();
    };
    let failed = errored || failure.is_some();
    if let Some(failure) = failure {
        let message = format!("provider {:?}: {failure}", provider.config.name);
        crate::warn!("{message}");
        let frame = json!({"error": {"message": message, "type": "upstream_error", "param": null, "code": failure.code()}});
        let _ = sink.send_json(&frame).await;
    }
    relaying.done(usage, output, &end, failed, false);
}

/// `POST /api/ui/chat/completions`: the same body, answered as a UI message stream
/// (one step, `start` .. `finish`, then `[DONE]`).
pub(crate) async fn ui_chat_completions(app: &Arc<App>, req: Request<Incoming>, caller: &Caller) -> Resp {
    let started = Instant::now();
    let (_parts, body) = req.into_parts();
    let mut value = match read_body(app, caller, body).await {
        Ok(value) => value,
        Err(resp) => return resp,
    };
    let targets = match resolve(app, &value) {
        Ok(targets) => targets,
        Err(resp) => return resp,
    };
    openai::prepare_stream_body(&mut value, &targets[0].model);
    app.limits
        .serve(Surface::Proxy, async {
            ui_stream(app, targets, value, caller, started)
        })
        .await
}

/// Streams one step of `value` (to the first target that answers) as a UI message
/// stream, counted in the chat metrics (`surface="ui_completions"`).
fn ui_stream(app: &Arc<App>, targets: Vec<Route>, value: Value, caller: &Caller, started: Instant) -> Resp {
    let (tx, body) = Body::channel(STREAM_FRAMES);
    let llm = app.llm.clone();
    let accounting = StepAccounting::start(app, caller);
    let mut metrics = ChatStream::new("ui_completions", started);
    metrics.provider(&targets[0].provider.config.name);
    tokio::spawn(async move {
        let mut sink = Metered::new(SseSink::new(tx), metrics);
        let opts = StepOptions::default();
        let step = llm.run_step_chain(&targets, &value, |_, _| {}, opts, &mut sink);
        if let Ok(summary) = step.await {
            let answered = crate::llm::route::answering_route(&targets, summary.target.as_deref());
            let output = || counted::summary_output(&summary);
            accounting.done(answered, summary.usage, &value, output);
            sink.stream().unknown_events(summary.unknown_events);
            let _ = sink.inner().done().await;
        }
    });
    respond::sse(body, true)
}

/// The usage in a non-streamed OpenAI answer, wherever the provider put it; only
/// an answer that mentions it is parsed.
fn usage_in(data: &[u8]) -> Option<Usage> {
    if !data.windows(7).any(|w| w == b"\"usage\"") {
        return None;
    }
    serde_json::from_slice::<openai::ChatChunk>(data).ok()?.usage()
}

/// `GET /v1/models`: the named agents (`owned_by: "wasmhub-agent"`), then the
/// providers' models.
pub(crate) async fn models(app: &Arc<App>) -> Resp {
    if app.llm.providers().is_empty() {
        return route_error(RouteError::NoProviders);
    }
    respond::json(StatusCode::OK, &super::agents::model_list(app).await)
}

/// Reads the body as JSON.
async fn read_body(app: &Arc<App>, caller: &Caller, body: Incoming) -> Result<Value, Resp> {
    let bodies = app.body_parser();
    let bytes = bodies.read(body).await.map_err(|e| e.into_response())?;
    let parsed = bodies
        .parse(caller.name(), bytes, |b| serde_json::from_slice::<Value>(b))
        .await
        .map_err(|e| e.into_response())?;
    parsed.map_err(|e| {
        respond::error(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            format!("request body is not valid JSON: {e}"),
        )
    })
}

/// Resolves the body's model to its targets (keys included: when no target has
/// its key, a 503 before anything is sent upstream).
fn resolve(app: &Arc<App>, value: &Value) -> Result<Vec<Route>, Resp> {
    let model = openai::requested_model(value)
        .map_err(|BadRequest(m)| respond::error(StatusCode::BAD_REQUEST, "invalid_request", m))?;
    let targets = app.llm.targets(model).map_err(route_error)?;
    if let Err(e) = crate::llm::check_keys(&targets) {
        return Err(respond::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "provider_not_configured",
            e.to_string(),
        ));
    }
    Ok(targets)
}

fn route_error(e: RouteError) -> Resp {
    match e {
        RouteError::NoProviders => {
            respond::error(StatusCode::SERVICE_UNAVAILABLE, "no_providers", e.to_string())
        }
        RouteError::UnknownModel { .. } => {
            respond::error(StatusCode::NOT_FOUND, "model_not_found", e.to_string())
        }
    }
}

fn call_error(e: UpstreamError) -> Resp {
    match &e {
        UpstreamError::MissingKey(key) => respond::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "provider_not_configured",
            key.to_string(),
        ),
        UpstreamError::Request { .. } => {
            respond::error(StatusCode::BAD_REQUEST, "unsupported_by_provider", e.to_string())
        }
        UpstreamError::Send { error, .. } => respond::error(error.status(), error.code(), e.to_string()),
    }
}

/// The upstream headers worth passing on, and `x-wasmhub-target`: the
/// `provider/model` target that answered.
fn relay_headers(from: &http::HeaderMap, route: &Route, to: &mut Resp) {
    if let Ok(target) = HeaderValue::try_from(route.target()) {
        to.headers_mut().insert("x-wasmhub-target", target);
    }
    for name in RELAYED_HEADERS {
        if let Some(v) = from.get(name) {
            to.headers_mut().insert(name, v.clone());
        }
    }
    for (name, v) in from {
        if name.as_str().starts_with("x-ratelimit-") {
            to.headers_mut().insert(name.clone(), v.clone());
        }
    }
}
