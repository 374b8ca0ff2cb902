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
    let mut resp = Response::new(Body::full(text));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    resp
}

/// `GET /health`: always 200, `{"status": "ok" | "loading", "plugins": {active,
/// deprecated, rejected, loading}, "operations": N}` ("loading" while plugins of
/// the first load are still compiling).
pub(crate) fn health(app: &App) -> Resp {
    respond::json(StatusCode::OK, &app.hub.health())
}
