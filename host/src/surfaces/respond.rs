//! Building responses: JSON bodies, the JSON error shape every route uses, and
//! reading a request body within a size limit.
//!
//! Error bodies are `{"error": {"code": "...", "message": "..."}}` with a matching
//! HTTP status, so every client gets the same shape from every route. (The OpenAI
//! proxy relays upstream errors in OpenAI's shape, which is the same outer form.)

use super::body::Body;
use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde::Serialize;

pub(crate) type Resp = Response<Body>;

/// A JSON response with `status`.
pub(crate) fn json<T: Serialize + ?Sized>(status: StatusCode, value: &T) -> Resp {
    json_body(status, Body::full(encode(value)))
}

/// A response body's JSON bytes (timed as the `encode` stage).
pub(crate) fn encode<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let started = std::time::Instant::now();
    let bytes = serde_json::to_vec(value).expect("serializable response");
    crate::timing::record(crate::timing::Stage::Encode, started);
    bytes
}

/// A response whose `body` is JSON, whole or still being written (see
/// [`super::watched::committed`]).
pub(crate) fn json_body(status: StatusCode, body: Body) -> Resp {
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// The hub's error shape: `{"error": {"code", "message"}}`.
pub(crate) fn error(status: StatusCode, code: &str, message: impl Into<String>) -> Resp {
    json(status, &error_body(code, message))
}

/// The body of [`error`].
pub(crate) fn error_body(code: &str, message: impl Into<String>) -> serde_json::Value {
    serde_json::json!({ "error": { "code": code, "message": message.into() } })
}

pub(crate) fn not_found(path: &str) -> Resp {
    error(StatusCode::NOT_FOUND, "not_found", format!("no route for {path}"))
}

pub(crate) fn method_not_allowed(allowed: &'static str) -> Resp {
    let mut resp = error(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("allowed: {allowed}"),
    );
    resp.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allowed));
    resp
}

/// An SSE response: the headers every stream the hub sends carries, plus
/// `x-vercel-ai-ui-message-stream: v1` when it is an AI SDK UI message stream.
pub(crate) fn sse(body: Body, ui_message_stream: bool) -> Resp {
    let mut resp = Response::new(body);
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::CONNECTION, HeaderValue::from_static("keep-alive"));
    // Proxies such as nginx would otherwise buffer the stream.
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    if ui_message_stream {
        h.insert("x-vercel-ai-ui-message-stream", HeaderValue::from_static("v1"));
    }
    resp
}

/// A self-contained HTML page compiled into the binary (the chat page, the
/// console), with the pages' security headers: a CSP allowing only the page's own
/// inline script and style and requests to the hub itself, `nosniff`, no referrer,
/// and `cache_control`.
pub(crate) fn embedded_page(html: &'static str, cache_control: &'static str) -> Resp {
    let mut resp = Response::new(Body::full(html));
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache_control));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(PAGE_CSP),
    );
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    resp
}

/// The embedded pages' content security policy.
const PAGE_CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                        connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
                        frame-ancestors 'none'";

pub(crate) fn no_content() -> Resp {
    empty(StatusCode::NO_CONTENT)
}

/// 202 with no body (MCP: notifications and client responses).
pub(crate) fn accepted() -> Resp {
    empty(StatusCode::ACCEPTED)
}

fn empty(status: StatusCode) -> Resp {
    let mut resp = Response::new(Body::empty());
    *resp.status_mut() = status;
    resp
}

/// Why a request body could not be read.
#[derive(Debug)]
pub(crate) enum BodyError {
    TooLarge { limit: usize },
    Read(Box<dyn std::error::Error + Send + Sync>),
    Json(serde_json::Error),
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::TooLarge { limit } => write!(f, "request body is larger than {limit} bytes"),
            BodyError::Read(e) => write!(f, "could not read the body: {e}"),
            BodyError::Json(e) => write!(f, "request body is not valid JSON: {e}"),
        }
    }
}

impl std::error::Error for BodyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BodyError::TooLarge { .. } => None,
            BodyError::Read(e) => Some(e.as_ref()),
            BodyError::Json(e) => Some(e),
        }
    }
}

impl BodyError {
    /// The answer's status on every surface: 413 for a body over the limit, else 400.
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            BodyError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            BodyError::Read(_) | BodyError::Json(_) => StatusCode::BAD_REQUEST,
        }
    }

    /// [`BodyError::status`] in the hub's error shape.
    pub(crate) fn into_response(self) -> Resp {
        let code = match self {
            BodyError::TooLarge { .. } => "body_too_large",
            BodyError::Read(_) => "bad_request",
            BodyError::Json(_) => "invalid_json",
        };
        error(self.status(), code, self.to_string())
    }
}

/// Reads the whole body, failing as soon as it passes `limit` bytes.
pub(crate) async fn read_body(body: Incoming, limit: usize) -> Result<Bytes, BodyError> {
    let limited = http_body_util::Limited::new(body, limit);
    match limited.collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
            Err(BodyError::TooLarge { limit })
        }
        Err(e) => Err(BodyError::Read(e)),
    }
}
