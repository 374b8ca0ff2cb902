//! Authentication of every HTTP request, decided here for all surfaces: the bearer
//! token read from `Authorization`, the hub's verdict on it (its tokens, or the
//! loopback-only rule when none are configured), and the one refusal every surface
//! sends: 401 with an RFC 6750 challenge for a missing or wrong token, 403 for a
//! non-loopback client of a hub without tokens. Only the body differs by surface
//! (the hub's JSON error shape, or a JSON-RPC error on `/mcp`).

use super::App;
use super::respond::{self, Resp};
use crate::hub::{AuthError, Caller, Hub};
use http::{HeaderMap, HeaderValue, Request, StatusCode, header};
use serde_json::Value;
use std::net::SocketAddr;

/// The challenge of a 401 without a token: RFC 6750 §3 sends no error code then.
const CHALLENGE: &str = "Bearer realm=\"wasmhub\"";
/// The challenge of a 401 for a token that matches none (RFC 6750 §3.1).
const CHALLENGE_INVALID_TOKEN: &str = "Bearer realm=\"wasmhub\", error=\"invalid_token\"";

/// Whoever turns a request's bearer token (or its absence) into a caller: the
/// hub, or a scripted stand-in in the MCP tests.
pub(crate) trait Gatekeeper: Send + Sync {
    /// The caller a request runs as; `bearer` is the token without `Bearer `.
    fn authenticate(&self, bearer: Option<&str>, peer: SocketAddr) -> Result<Caller, AuthError>;

    /// The caller of a process the operator started (MCP over stdio).
    fn local_operator(&self) -> Caller;
}

impl Gatekeeper for Hub {
    fn authenticate(&self, bearer: Option<&str>, peer: SocketAddr) -> Result<Caller, AuthError> {
        Hub::authenticate(self, bearer, peer)
    }

    fn local_operator(&self) -> Caller {
        Hub::local_operator(self)
    }
}

/// The caller of a request with `headers` from `peer`, or why it is refused.
pub(crate) fn authenticate<G: Gatekeeper + ?Sized>(
    gate: &G,
    headers: &HeaderMap,
    peer: SocketAddr,
) -> Result<Caller, Refusal> {
    gate.authenticate(bearer_token(headers), peer).map_err(Refusal)
}

/// The caller of a request to the hub's own routes (`/api/*`, `/v1/*`), or the
/// refusal in the hub's JSON error shape.
pub(crate) fn authorize<B>(app: &App, req: &Request<B>, peer: SocketAddr) -> Result<Caller, Resp> {
    authenticate(&*app.hub, req.headers(), peer).map_err(Refusal::into_response)
}

/// The token of an `Authorization: Bearer <token>` header (scheme case-insensitive).
pub(crate) fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let (scheme, token) = headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .trim()
        .split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// A refused request and why.
#[derive(Debug)]
pub(crate) struct Refusal(pub AuthError);

impl Refusal {
    /// 403 for a non-loopback client of a hub without tokens, 401 otherwise.
    pub(crate) fn status(&self) -> StatusCode {
        match self.0 {
            AuthError::NotLoopback { .. } => StatusCode::FORBIDDEN,
            AuthError::MissingToken | AuthError::InvalidToken => StatusCode::UNAUTHORIZED,
        }
    }

    /// The refusal with `body`, the surface's own error shape.
    pub(crate) fn respond(&self, body: &Value) -> Resp {
        let mut resp = respond::json(self.status(), body);
        let challenge = match self.0 {
            AuthError::MissingToken => CHALLENGE,
            AuthError::InvalidToken => CHALLENGE_INVALID_TOKEN,
            AuthError::NotLoopback { .. } => return resp,
        };
        resp.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
        resp
    }

    /// The refusal in the hub's JSON error shape.
    pub(crate) fn into_response(self) -> Resp {
        self.respond(&respond::error_body(self.0.code(), self.0.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_bearer_tokens() {
        let with = |value: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::AUTHORIZATION, value.parse().unwrap());
            h
        };
        assert_eq!(bearer_token(&with("Bearer abc")), Some("abc"));
        assert_eq!(bearer_token(&with(" bearer  abc ")), Some("abc"));
        assert_eq!(bearer_token(&with("Basic abc")), None);
        assert_eq!(bearer_token(&with("Bearer")), None);
        assert_eq!(bearer_token(&HeaderMap::new()), None);
    }

    #[test]
    fn refusals_carry_one_challenge() {
        let resp = Refusal(AuthError::MissingToken).into_response();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(resp.headers()[header::WWW_AUTHENTICATE], CHALLENGE);
        let resp = Refusal(AuthError::InvalidToken).into_response();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(resp.headers()[header::WWW_AUTHENTICATE], CHALLENGE_INVALID_TOKEN);
        let peer = "10.0.0.1:1".parse().unwrap();
        let resp = Refusal(AuthError::NotLoopback { peer }).into_response();
        assert_eq!(resp.status(), StatusCode::FORBIDDEN);
        assert!(resp.headers().get(header::WWW_AUTHENTICATE).is_none());
    }
}
