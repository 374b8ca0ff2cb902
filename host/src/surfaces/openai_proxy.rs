//! The OpenAI-compatible proxy (`POST /v1/chat/completions`, `GET /v1/models`) and
//! the same call answered as an AI SDK UI message stream
//! (`POST /api/ui/chat/completions`).
//!
//! The proxy passes the client's body through unchanged except for `model` (the
//! `provider/` prefix removed), injects the provider's key and relays upstream
//! answers with their status and body. Streams are re-framed event by event (the
//! data of every event byte for byte; upstream comments dropped) so the hub can add
//! keepalive comments between events and stop the moment the client goes away.
//!
//! Error choices: hub-side problems (bad body, unknown model, no provider, missing
//! key) are the hub's JSON errors with a status. On the UI endpoint an upstream
//! failure arrives inside the stream as an `error` chunk (then `finish`), the same
//! way a mid-stream failure does, so `useChat` shows the provider's message.

use super::App;
use super::body::Body;
use super::limit::Surface;
use super::respond::{self, Resp};
use crate::hub::{Caller, StepReport};
use crate::llm::client::SendError;
use crate::llm::openai::{self, BadRequest};
use crate::llm::stream::{EventReader, SseSink, keepalive_while};
use crate::llm::upstream::{self, UpstreamError};
use crate::llm::{Route, RouteError, StepOptions, Usage};
use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Frames buffered towards one client before the producer waits (each at most
/// `stream::MAX_FRAME` bytes, so at most 1 MiB per stream).
const STREAM_FRAMES: usize = 16;
/// Largest non-streamed upstream answer relayed.
const MAX_UPSTREAM_BODY: usize = 64 << 20;
/// Upstream response headers worth passing on to the client.
const RELAYED_HEADERS: [&str; 4] = [
    "retry-after",
    "retry-after-ms",
    "x-request-id",
    "openai-processing-ms",
];

/// `POST /v1/chat/completions`.
pub(crate) async fn chat_completions(app: &Arc<App>, req: Request<Incoming>, caller: &Caller) -> Resp {
    let (parts, body) = req.into_parts();
    let (route, value) = match read_request(app, body).await {
        Ok(ok) => ok,
        Err(resp) => return resp,
    };
    app.limits
        .serve(Surface::Proxy, relay(app, &parts.headers, route, value, caller))
        .await
}

/// Sends a checked request upstream and relays the answer.
async fn relay(
    app: &Arc<App>,
    headers: &http::HeaderMap,
    route: Route,
    mut value: Value,
    caller: &Caller,
) -> Resp {
    value["model"] = Value::String(route.model.clone());
    let meter = StepMeter::start(app, &route, caller);
    let stream = openai::wants_stream(&value);
    let payload = Bytes::from(serde_json::to_vec(&value).expect("a JSON value serializes"));
    let forwarded = upstream::forwarded_headers(headers);
    let resp = match app.llm.chat(&route, payload, &forwarded).await {
        Ok(resp) => resp,
        Err(e) => return call_error(e),
    };
    let is_sse = resp
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !(stream && resp.status.is_success() && is_sse) {
        // Errors, non-streamed answers, and servers that ignored `stream: true`.
        let (status, headers) = (resp.status, resp.headers);
        let bytes = match resp.body.collect(MAX_UPSTREAM_BODY).await {
            Ok(bytes) => bytes,
            Err(e) => return upstream_failure(&route, StatusCode::BAD_GATEWAY, &e.to_string()),
        };
        if status.is_success() {
            meter.done(usage_in(&bytes));
        }
        let mut out = Response::new(Body::full(bytes));
        *out.status_mut() = status;
        let ct = headers
            .get(header::CONTENT_TYPE)
            .cloned()
            .unwrap_or(HeaderValue::from_static("application/json"));
        out.headers_mut().insert(header::CONTENT_TYPE, ct);
        relay_headers(&headers, &mut out);
        return out;
    }
    let (tx, body) = Body::channel(STREAM_FRAMES);
    let mut out = respond::sse(body, false);
    relay_headers(&resp.headers, &mut out);
    let provider = route.provider.clone();
    tokio::spawn(async move {
        let mut sink = SseSink::new(tx);
        let interval = Duration::from_millis(provider.config.keepalive_ms.max(1));
        let max_event = (provider.config.max_event_kb.max(1) as usize).saturating_mul(1024);
        let mut reader = EventReader::new(resp.body, max_event);
        let mut usage = None;
        loop {
            // `Err(Closed)` anywhere: the client left; leaving drops the upstream body.
            let Ok(next) = keepalive_while(&mut sink, interval, reader.next()).await else {
                break;
            };
            match next {
                Ok(Some(event)) => {
                    usage = usage_in(event.data.as_bytes()).or(usage);
                    if sink.send_event(&event).await.is_err() {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    let message = format!("provider {:?}: {e}", provider.config.name);
                    crate::warn!("{message}");
                    let frame = json!({"error": {"message": message, "type": "upstream_error", "param": null, "code": null}});
                    let _ = sink.send_json(&frame).await;
                    break;
                }
            }
        }
        meter.done(usage);
    });
    out
}

/// `POST /api/ui/chat/completions`: the same body, answered as a UI message stream
/// (one step, `start` .. `finish`, then `[DONE]`).
pub(crate) async fn ui_chat_completions(app: &Arc<App>, req: Request<Incoming>, caller: &Caller) -> Resp {
    let (_parts, body) = req.into_parts();
    let (route, mut value) = match read_request(app, body).await {
        Ok(ok) => ok,
        Err(resp) => return resp,
    };
    openai::prepare_stream_body(&mut value, &route.model);
    app.limits
        .serve(Surface::Proxy, async { ui_stream(app, route, value, caller) })
        .await
}

/// Streams one step of `value` to `route` as a UI message stream.
fn ui_stream(app: &Arc<App>, route: Route, value: Value, caller: &Caller) -> Resp {
    let (tx, body) = Body::channel(STREAM_FRAMES);
    let llm = app.llm.clone();
    let meter = StepMeter::start(app, &route, caller);
    tokio::spawn(async move {
        let mut sink = SseSink::new(tx);
        let mut opts = StepOptions::default();
        opts.finish_metadata.insert(
            "provider".into(),
            Value::String(route.provider.config.name.clone()),
        );
        if let Ok(summary) = llm.run_step(&route, &value, opts, &mut sink).await {
            meter.done(summary.usage);
            let _ = sink.done().await;
        }
    });
    respond::sse(body, true)
}

/// One proxied model call on its way to the accounting (`hub::accounting`).
struct StepMeter {
    hub: Arc<crate::hub::Hub>,
    caller: String,
    provider: String,
    model: String,
    started: Instant,
}

impl StepMeter {
    fn start(app: &App, route: &Route, caller: &Caller) -> StepMeter {
        StepMeter {
            hub: app.hub.clone(),
            caller: caller.name().to_string(),
            provider: route.provider.config.name.clone(),
            model: route.model.clone(),
            started: Instant::now(),
        }
    }

    /// Records the call, with the usage the provider reported.
    fn done(self, usage: Option<Usage>) {
        self.hub.record_model_step(StepReport {
            session: None,
            message: None,
            step: 0,
            caller: &self.caller,
            provider: &self.provider,
            model: &self.model,
            usage,
            latency: self.started.elapsed(),
        });
    }
}

/// The usage in an OpenAI answer or stream event, wherever the provider put it;
/// only events that mention it are parsed.
fn usage_in(data: &[u8]) -> Option<Usage> {
    if !data.windows(7).any(|w| w == b"\"usage\"") {
        return None;
    }
    serde_json::from_slice::<openai::ChatChunk>(data).ok()?.usage()
}

/// `GET /v1/models`.
pub(crate) async fn models(app: &Arc<App>) -> Resp {
    if app.llm.providers().is_empty() {
        return route_error(RouteError::NoProviders);
    }
    respond::json(StatusCode::OK, &app.llm.list_models().await)
}

/// Reads and checks the body and resolves its model (key included, so a missing key
/// is a 503 before anything is sent upstream).
async fn read_request(app: &Arc<App>, body: Incoming) -> Result<(Route, Value), Resp> {
    let limit = (app.config.server.max_body_kb as usize).saturating_mul(1024);
    let bytes = respond::read_body(body, limit)
        .await
        .map_err(|e| e.into_response())?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
        respond::error(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            format!("request body is not valid JSON: {e}"),
        )
    })?;
    let model = openai::requested_model(&value)
        .map_err(|BadRequest(m)| respond::error(StatusCode::BAD_REQUEST, "invalid_request", m))?;
    let route = app.llm.route(model).map_err(route_error)?;
    if let Err(e) = route.provider.auth_header() {
        return Err(respond::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "provider_not_configured",
            e.to_string(),
        ));
    }
    Ok((route, value))
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
        UpstreamError::Send { error, .. } => {
            let status = match error {
                SendError::ConnectTimeout(_) | SendError::FirstByteTimeout(_) => StatusCode::GATEWAY_TIMEOUT,
                SendError::Connect(_) | SendError::Protocol(_) => StatusCode::BAD_GATEWAY,
            };
            respond::error(status, "upstream_unavailable", e.to_string())
        }
    }
}

fn upstream_failure(route: &Route, status: StatusCode, message: &str) -> Resp {
    respond::error(
        status,
        "upstream_error",
        format!("provider {:?}: {message}", route.provider.config.name),
    )
}

fn relay_headers(from: &http::HeaderMap, to: &mut Resp) {
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
