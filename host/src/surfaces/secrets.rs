//! The operator's secret API: `PUT /api/plugins/{plugin}/secrets/{name}` with
//! `{"value": "..."}` seals and stores a value (204), `DELETE` removes it (204, or
//! 404 when none is stored). Operators only (the local operator, tokens with
//! `operator = true`; an OAuth grant also needs the `operator` scope); the plugin
//! must be loaded and declare the secret. The value is never logged or echoed.

use super::App;
use super::respond::{self, Resp};
use crate::hub::{Caller, SecretAdminError};
use crate::runtime::secrets::SecretError;
use http::{Request, StatusCode};
use hyper::body::Incoming;
use serde::Deserialize;

/// The body of `PUT /api/plugins/{plugin}/secrets/{name}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetSecret {
    value: String,
}

/// `PUT /api/plugins/{plugin}/secrets/{name}`.
pub(crate) async fn set(
    app: &App,
    req: Request<Incoming>,
    caller: &Caller,
    plugin: &str,
    name: &str,
) -> Resp {
    // The value's limit (secrets.max_value_kb), JSON escaping aside, plus the wrapping.
    let limit = app.hub.runtime().secrets().max_value_bytes() * 2 + 1024;
    let body = match respond::read_body(req.into_body(), limit).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let Ok(body) = serde_json::from_slice::<SetSecret>(&body) else {
        // Not serde's message: it may quote the value.
        let why = "the body must be {\"value\": \"...\"}";
        return respond::error(StatusCode::BAD_REQUEST, "invalid_input", why);
    };
    match app.hub.set_secret(caller, plugin, name, &body.value).await {
        Ok(()) => respond::no_content(),
        Err(e) => refused(&e),
    }
}

/// `DELETE /api/plugins/{plugin}/secrets/{name}`.
pub(crate) async fn remove(app: &App, caller: &Caller, plugin: &str, name: &str) -> Resp {
    match app.hub.remove_secret(caller, plugin, name).await {
        Ok(true) => respond::no_content(),
        Ok(false) => respond::error(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no value of {plugin}/{name} is stored"),
        ),
        Err(e) => refused(&e),
    }
}

fn refused(e: &SecretAdminError) -> Resp {
    let (status, code) = match e {
        SecretAdminError::NotOperator => (StatusCode::FORBIDDEN, "forbidden"),
        SecretAdminError::Undeclared { .. } => (StatusCode::NOT_FOUND, "not_found"),
        SecretAdminError::Empty | SecretAdminError::Secret(SecretError::TooLarge { .. }) => {
            (StatusCode::BAD_REQUEST, "invalid_input")
        }
        SecretAdminError::Secret(SecretError::Key(_)) => (StatusCode::SERVICE_UNAVAILABLE, "no_secrets_key"),
        SecretAdminError::Secret(_) => (StatusCode::INTERNAL_SERVER_ERROR, "storage_error"),
    };
    respond::error(status, code, e.to_string())
}
