//! Authentication of every HTTP request, decided here for all surfaces: the bearer
//! token read from `Authorization`, the hub's verdict on it (its tokens, OAuth
//! grants, or the loopback-only rule when none are configured), and the one
//! refusal every surface sends: 401 with an RFC 6750 challenge for a missing or
//! refused token, 403 for a token without the route's scope (`insufficient_scope`),
//! for an external issuer's token whose subject maps to no principal, and for a
//! non-loopback client of a hub without tokens. With `[oauth]` on, every
//! challenge also points to the protected resource metadata (RFC 9728) and names
//! the scope the route needs. Only the body differs by surface (the hub's JSON
//! error shape, a JSON-RPC error on `/mcp`, Anthropic's on `/v1/messages`).

use super::App;
use super::respond::{self, Resp};
use crate::hub::{AuthError, Caller, Credentials, Hub, Rejection, Resource, Scope};
use http::{HeaderMap, HeaderValue, Request, StatusCode, header};
use serde_json::Value;
use std::net::SocketAddr;

/// The path of the protected resource metadata (RFC 9728 §3), before the
/// resource's own path.
pub(crate) const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Whoever turns a request's bearer token (or its absence) into a caller: the
/// hub, or a scripted stand-in in the MCP tests.
#[async_trait::async_trait]
pub(crate) trait Gatekeeper: Send + Sync {
    /// The caller a request presenting `creds` runs as.
    async fn authenticate(&self, creds: Credentials<'_>) -> Result<Caller, AuthError>;

    /// The caller of a process the operator started (MCP over stdio).
    fn local_operator(&self) -> Caller;

    /// `oauth.public_url` when OAuth is on: refusals point to its metadata.
    fn oauth_base(&self) -> Option<&str> {
        None
    }
}

#[async_trait::async_trait]
impl Gatekeeper for Hub {
    async fn authenticate(&self, creds: Credentials<'_>) -> Result<Caller, AuthError> {
        Hub::authenticate(self, creds).await
    }

    fn local_operator(&self) -> Caller {
        Hub::local_operator(self)
    }

    fn oauth_base(&self) -> Option<&str> {
        Hub::oauth_base(self)
    }
}

/// The caller of a request with `headers` from `peer` to a route of `resource`
/// that needs `needs`, or why it is refused. `bearer` overrides the header (the
/// Anthropic surface's `x-api-key`).
pub(crate) async fn authenticate<G: Gatekeeper + ?Sized>(
    gate: &G,
    bearer: Option<&str>,
    peer: SocketAddr,
    resource: Resource,
    needs: Scope,
) -> Result<Caller, Refusal> {
    let creds = Credentials {
        bearer,
        peer,
        resource,
        needs,
    };
    gate.authenticate(creds).await.map_err(|error| {
        if let AuthError::Rejected(why) = &error {
            // Why, never the token: the log is read by more people than the token's owner.
            crate::info!("refused an access token from {}: {}", peer.ip(), why.reason());
        }
        Refusal {
            error,
            metadata: gate
                .oauth_base()
                .map(|base| format!("{base}{RESOURCE_METADATA_PATH}{}", resource.suffix())),
            needs,
        }
    })
}

/// The caller of a request to the hub's own routes (`/api/*`, `/v1/*`) that
/// need `needs`, or the refusal in the hub's JSON error shape.
pub(crate) async fn authorize<B>(
    app: &App,
    req: &Request<B>,
    peer: SocketAddr,
    needs: Scope,
) -> Result<Caller, Resp> {
    authenticate(&*app.hub, bearer_token(req.headers()), peer, Resource::Api, needs)
        .await
        .map_err(Refusal::into_response)
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

/// A refused request, why, and what its challenge points to.
#[derive(Debug)]
pub(crate) struct Refusal {
    /// Why.
    pub error: AuthError,
    /// The protected resource metadata URL, when OAuth is on.
    metadata: Option<String>,
    /// The scope the route needs.
    needs: Scope,
}

impl Refusal {
    /// 403 for a missing scope and a non-loopback client of a hub without
    /// tokens, 401 otherwise.
    pub(crate) fn status(&self) -> StatusCode {
        match self.error {
            // A valid token whose person this hub does not know: authenticating
            // again as the same person cannot help.
            AuthError::Rejected(Rejection::UnmappedSubject) => StatusCode::FORBIDDEN,
            AuthError::NotLoopback { .. } | AuthError::InsufficientScope { .. } => StatusCode::FORBIDDEN,
            AuthError::MissingToken | AuthError::InvalidToken | AuthError::Rejected(_) => {
                StatusCode::UNAUTHORIZED
            }
        }
    }

    /// The `WWW-Authenticate` challenge (RFC 6750 §3, RFC 9728 §5.1); `None` for
    /// the loopback rule, which no token can satisfy.
    fn challenge(&self) -> Option<String> {
        let mut params: Vec<String> = Vec::new();
        match &self.error {
            AuthError::NotLoopback { .. } => return None,
            // RFC 6750 §3: a request without credentials gets no error code.
            AuthError::MissingToken => {}
            AuthError::InvalidToken => params.push("error=\"invalid_token\"".into()),
            AuthError::Rejected(why) => {
                params.push("error=\"invalid_token\"".into());
                params.push(format!("error_description=\"{}\"", why.reason()));
            }
            AuthError::InsufficientScope { .. } => params.push("error=\"insufficient_scope\"".into()),
        }
        match &self.metadata {
            Some(url) => {
                params.push(format!("resource_metadata=\"{url}\""));
                params.push(format!("scope=\"{}\"", self.needs.as_str()));
            }
            None => params.insert(0, "realm=\"wasmhub\"".into()),
        }
        Some(format!("Bearer {}", params.join(", ")))
    }

    /// The refusal with `body`, the surface's own error shape.
    pub(crate) fn respond(&self, body: &Value) -> Resp {
        let mut resp = respond::json(self.status(), body);
        if let Some(challenge) = self.challenge().and_then(|c| HeaderValue::try_from(c).ok()) {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
        }
        resp
    }

    /// The refusal in the hub's JSON error shape.
    pub(crate) fn into_response(self) -> Resp {
        self.respond(&respond::error_body(self.error.code(), self.error.to_string()))
    }
}

#[cfg(test)]
mod tests;
