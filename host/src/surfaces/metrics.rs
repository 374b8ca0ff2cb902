//! Operational endpoints without a bearer token (scrapers and liveness probes do
//! not carry one; the Host/Origin guard still applies): `GET /metrics` in
//! Prometheus text format and `GET /health` with plugin counts.

use super::App;
use super::body::Body;
use super::respond::{self, Resp};
use http::{HeaderValue, Response, StatusCode, header};

/// `GET /metrics`.
pub(crate) fn metrics(app: &App) -> Resp {
    let mut text = app.hub.metrics_text();
    text.push_str(&app.limits.metrics_text());
    text.push_str(&app.agent.metrics_text());
    text.push_str(&crate::timing::metrics_text());
    text.push_str(&crate::llm::terminal::metrics_text());
    text.push_str(&crate::llm::client_metrics::metrics_text());
    text.push_str(&crate::telemetry::metrics_text());
    text.push_str(&super::mcp::metrics::metrics_text());
    text.push_str(&super::chat_metrics::metrics_text());
    let mut resp = Response::new(Body::full(text));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    resp
}

/// `GET /health`: `{"status": "ok" | "loading", "plugins": {active, deprecated,
/// rejected, loading}, "operations": N}` ("loading" while plugins of the first
/// load are still compiling). Always 200 (the process is alive), except with the
/// query `?ready`, a readiness probe: 503 while loading, so a load balancer or
/// Kubernetes sends no traffic to a replica whose plugins are not there yet.
pub(crate) fn health(app: &App, query: Option<&str>) -> Resp {
    let health = app.hub.health();
    let readiness = query.is_some_and(|q| q.split('&').any(|p| p == "ready" || p.starts_with("ready=")));
    let status = if readiness && health["status"] != "ok" {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    respond::json(status, &health)
}
