//! Operational endpoints without a bearer token (scrapers and liveness probes do
//! not carry one; the Host/Origin guard still applies): `GET /metrics` in
//! Prometheus text format and `GET /health` with plugin counts.

use super::App;
use super::body::Body;
use super::respond::{self, Resp};
use http::{HeaderValue, Response, StatusCode, header};
use serde_json::json;

/// `GET /metrics`.
pub(crate) fn metrics(app: &App) -> Resp {
    let mut resp = Response::new(Body::full(app.hub.metrics_text()));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    resp
}

/// `GET /health`: `{"status": "ok", "plugins": {active, deprecated, rejected}, "operations": N}`.
pub(crate) fn health(app: &App) -> Resp {
    let mut body = json!({ "status": "ok" });
    if let (Some(out), serde_json::Value::Object(extra)) = (body.as_object_mut(), app.hub.health()) {
        out.extend(extra);
    }
    respond::json(StatusCode::OK, &body)
}
