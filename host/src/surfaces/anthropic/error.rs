//! Anthropic's error shape, `{"type": "error", "error": {"type", "message"}}`, and
//! the error type each HTTP status carries on the Messages API, so an Anthropic SDK
//! raises the error class it would raise against Anthropic itself.

use crate::llm::anthropic_wire;
use crate::surfaces::respond::{self, Resp};
use http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

/// One refused or failed request, answered in Anthropic's error shape.
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    /// The HTTP status of the answer.
    pub status: StatusCode,
    /// The message the client shows.
    pub message: String,
    /// Headers sent with it (an upstream's `retry-after`).
    pub headers: HeaderMap,
}

impl ApiError {
    /// An error with `status` and `message`; its Anthropic type follows the status.
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            headers: HeaderMap::new(),
        }
    }

    /// A 400 `invalid_request_error`.
    pub(crate) fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    /// The answer: this status with the error body.
    pub(crate) fn into_response(self) -> Resp {
        let mut resp = respond::json(self.status, &body(error_type(self.status), &self.message));
        resp.headers_mut().extend(self.headers);
        resp
    }
}

/// `{"type": "error", "error": {"type": kind, "message": message}}`.
pub(crate) fn body(kind: &str, message: &str) -> Value {
    json!({ "type": "error", "error": { "type": kind, "message": message } })
}

/// The error type Anthropic's API sends with `status`.
pub(crate) fn error_type(status: StatusCode) -> &'static str {
    anthropic_wire::error_type(status.as_u16())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_carry_anthropics_error_types() {
        assert_eq!(error_type(StatusCode::BAD_REQUEST), "invalid_request_error");
        assert_eq!(
            error_type(StatusCode::UNPROCESSABLE_ENTITY),
            "invalid_request_error"
        );
        assert_eq!(error_type(StatusCode::UNAUTHORIZED), "authentication_error");
        assert_eq!(error_type(StatusCode::FORBIDDEN), "permission_error");
        assert_eq!(error_type(StatusCode::NOT_FOUND), "not_found_error");
        assert_eq!(error_type(StatusCode::PAYLOAD_TOO_LARGE), "request_too_large");
        assert_eq!(error_type(StatusCode::TOO_MANY_REQUESTS), "rate_limit_error");
        assert_eq!(error_type(StatusCode::BAD_GATEWAY), "api_error");
        assert_eq!(error_type(StatusCode::from_u16(529).unwrap()), "overloaded_error");
        assert_eq!(
            body("api_error", "boom"),
            json!({"type": "error", "error": {"type": "api_error", "message": "boom"}})
        );
    }
}
