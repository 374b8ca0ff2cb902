//! The authorization server's machine endpoints: `POST /oauth/token`
//! (authorization code and refresh token grants), `POST /oauth/revoke` (RFC
//! 7009), `POST /oauth/register` (RFC 7591), and `POST /api/oauth/signin-codes`
//! (an operator creating a one-time sign-in code). Every answer holding a secret
//! is `Cache-Control: no-store`.

use super::form::Params;
use crate::hub::{Caller, Hub, Scopes};
use crate::oauth::AuthServer;
use crate::oauth::clients::{LookupError, Metadata, RegisterError};
use crate::oauth::grants::{RedeemError, Redemption};
use crate::surfaces::respond::{self, Resp};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::{Value, json};

/// An OAuth error answer (RFC 6749 §5.2).
fn oauth_error(status: StatusCode, code: &str, description: &str) -> Resp {
    no_store(respond::json(
        status,
        &json!({ "error": code, "error_description": description }),
    ))
}

fn no_store(mut resp: Resp) -> Resp {
    let h = resp.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    resp
}

/// The client id of a token request: the `client_id` parameter, or the user of
/// HTTP Basic (clients that believe they are confidential send it there; every
/// client here is public, so the password is ignored).
fn client_id<'a>(params: &'a Params, headers: &HeaderMap, basic: &'a mut String) -> Option<&'a str> {
    if let Some(id) = params.get("client_id") {
        return Some(id);
    }
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = String::from_utf8(crate::base64::decode(encoded.trim())?).ok()?;
    let user = decoded.split_once(':').map_or(decoded.as_str(), |(u, _)| u);
    *basic = crate::surfaces::query::decode(user)?;
    Some(basic.as_str())
}

/// `POST /oauth/token`.
pub(super) async fn token(server: &AuthServer, headers: &HeaderMap, body: &str) -> Resp {
    let params = match Params::parse(body) {
        Ok(p) => p,
        Err(e) => return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", &e.to_string()),
    };
    let mut basic = String::new();
    let Some(client_id) = client_id(&params, headers, &mut basic) else {
        return oauth_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "client_id is required",
        );
    };
    match server.clients.get(client_id).await {
        Ok(Some(_)) => {}
        Ok(None) => return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", "unknown client"),
        Err(e @ LookupError::Document { .. }) => {
            return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", &e.to_string());
        }
        Err(LookupError::Storage(e)) => return storage_failed(&e),
    }
    let resource = params.get("resource");
    let missing = |name: &str| {
        oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            &format!("{name} is required"),
        )
    };
    let answer = match params.get("grant_type") {
        Some("authorization_code") => {
            let (Some(code), Some(verifier)) = (params.get("code"), params.get("code_verifier")) else {
                return missing("code and code_verifier");
            };
            let redemption = Redemption {
                code,
                client_id,
                redirect_uri: params.get("redirect_uri"),
                verifier,
                resource,
            };
            server.issuer.redeem_code(redemption).await
        }
        Some("refresh_token") => {
            let Some(refresh) = params.get("refresh_token") else {
                return missing("refresh_token");
            };
            let scope = match params.get("scope").map(Scopes::parse).transpose() {
                Ok(s) => s,
                Err(e) => return oauth_error(StatusCode::BAD_REQUEST, "invalid_scope", &e.to_string()),
            };
            server.issuer.refresh(refresh, client_id, scope, resource).await
        }
        Some(_) => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "grant_type must be authorization_code or refresh_token",
            );
        }
        None => return missing("grant_type"),
    };
    match answer {
        Ok(pair) => no_store(respond::json(StatusCode::OK, &pair)),
        Err(RedeemError::Storage(e)) => storage_failed(&e),
        Err(e) => {
            crate::info!("oauth: token request of client {client_id} refused: {e}");
            oauth_error(StatusCode::BAD_REQUEST, e.code(), &e.to_string())
        }
    }
}

fn storage_failed(e: &crate::storage::StorageError) -> Resp {
    crate::error!("oauth: storage failed: {e}");
    oauth_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "server_error",
        "the authorization server's storage failed",
    )
}

/// `POST /oauth/revoke`: 200 whether or not the token was known (RFC 7009 §2.2).
pub(super) async fn revoke(server: &AuthServer, body: &str) -> Resp {
    let params = match Params::parse(body) {
        Ok(p) => p,
        Err(e) => return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", &e.to_string()),
    };
    let Some(token) = params.get("token") else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "token is required");
    };
    match server.issuer.revoke(token).await {
        Ok(()) => no_store(respond::json(StatusCode::OK, &json!({}))),
        Err(e) => storage_failed(&e),
    }
}

/// `POST /oauth/register`: 201 with the client's id and metadata; 429 past the
/// rate limit or the cap on unused registrations.
pub(super) async fn register(server: &AuthServer, body: &[u8]) -> Resp {
    let metadata: Metadata = match serde_json::from_slice(body) {
        Ok(m) => m,
        Err(e) => {
            let why = format!("the body must be a JSON client metadata object: {e}");
            return oauth_error(StatusCode::BAD_REQUEST, "invalid_client_metadata", &why);
        }
    };
    match server.clients.register(metadata).await {
        Ok(info) => {
            let body = json!({
                "client_id": info.client_id,
                "client_id_issued_at": info.client_id_issued_at,
                "client_name": info.client_name,
                "redirect_uris": info.redirect_uris,
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                // Every client is public: PKCE, not a secret, proves the redeemer.
                "token_endpoint_auth_method": "none",
            });
            no_store(respond::json(StatusCode::CREATED, &body))
        }
        Err(RegisterError::Storage(e)) => storage_failed(&e),
        Err(e @ (RegisterError::RateLimited { .. } | RegisterError::TooManyUnused { .. })) => {
            crate::warn!("oauth: a client registration was refused: {e}");
            let mut resp = oauth_error(StatusCode::TOO_MANY_REQUESTS, e.code(), &e.to_string());
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("60"));
            resp
        }
        Err(e) => oauth_error(StatusCode::BAD_REQUEST, e.code(), &e.to_string()),
    }
}

/// `POST /api/oauth/signin-codes` `{"principal": NAME}`: operators only; the code
/// is in the answer and nowhere else.
pub(super) async fn signin_code(server: &AuthServer, hub: &Hub, caller: &Caller, body: &[u8]) -> Resp {
    if !caller.is_operator() {
        return respond::error(
            StatusCode::FORBIDDEN,
            "forbidden",
            "only operators create sign-in codes",
        );
    }
    let principal = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("principal").and_then(Value::as_str).map(str::to_string));
    let Some(principal) = principal else {
        return respond::error(
            StatusCode::BAD_REQUEST,
            "invalid_input",
            "send {\"principal\": NAME}, NAME a configured token's name",
        );
    };
    if hub.policy(&principal).is_none() {
        return respond::error(
            StatusCode::BAD_REQUEST,
            "invalid_input",
            format!("no [[tokens]] entry is named {principal:?}: a sign-in runs under that token's policy"),
        );
    }
    match server.signin.create(&principal).await {
        Ok((code, expires_in)) => {
            crate::info!("oauth: {} created a sign-in code for {principal}", caller.name());
            no_store(respond::json(
                StatusCode::CREATED,
                &json!({ "code": code, "principal": principal, "expires_in": expires_in }),
            ))
        }
        Err(e) => {
            crate::error!("oauth: cannot store a sign-in code: {e}");
            respond::error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "storage",
                "the hub's storage failed",
            )
        }
    }
}
