//! The OAuth routes, present only when `[oauth]` is on (otherwise each answers
//! 404, as before, so clients that send a configured header keep doing so):
//!
//! | route | who may use it |
//! |---|---|
//! | `GET /.well-known/oauth-protected-resource[/mcp]` | anyone: RFC 9728 metadata of the API root / of `/mcp` |
//! | `GET /.well-known/oauth-authorization-server` | anyone (builtin): RFC 8414 metadata |
//! | `POST /oauth/register` | anyone (builtin), rate limited: RFC 7591 |
//! | `GET`/`POST /oauth/authorize` | a person in a browser (builtin): sign-in and consent, same-origin only |
//! | `POST /oauth/token`, `POST /oauth/revoke` | registered clients (builtin) |
//! | `OPTIONS` of the discovery, register, token and revoke routes | anyone: CORS preflight |
//! | `POST /api/oauth/signin-codes` | operators (builtin): one-time sign-in codes |
//!
//! - `form`: parameters; `page`: the consent page; `authorize`: the code flow;
//!   `token`: the token, revocation, registration and sign-in code endpoints;

mod authorize;
mod form;
mod page;
mod token;

use super::App;
use super::cors;
use super::respond::{self, Resp};
use crate::config::Config;
use crate::hub::TokenVerifier;
use crate::hub::{Caller, Hub, Resource, Scope};
use crate::oauth::{AuthServer, JwtIssuers};
use crate::storage::{Backend, StorageError};
use http::{Method, Request, StatusCode};
use hyper::body::Incoming;
use serde_json::json;
use std::sync::Arc;

/// What the OAuth routes serve. Built once by `wasmhub serve`.
#[derive(Clone, Default)]
pub struct OAuthState {
    /// `oauth.public_url` without a trailing slash; `None`: OAuth is off.
    base: Option<String>,
    /// The built-in authorization server (`oauth.builtin`).
    server: Option<Arc<AuthServer>>,
    /// The authorization servers the resource metadata names: the hub itself
    /// when builtin, and the `[[oauth.issuers]]`.
    servers: Vec<String>,
}

impl OAuthState {
    /// The routes of `config`: nothing when `[oauth]` is off; with `oauth.builtin`,
    /// the authorization server over `backend`'s store; `hub` accepts its tokens
    /// and those of the `[[oauth.issuers]]` from now on.
    pub async fn open(config: &Config, hub: &Hub, backend: &Backend) -> Result<OAuthState, StorageError> {
        if !config.oauth.enabled() {
            return Ok(OAuthState::default());
        }
        let mut verifiers: Vec<Arc<dyn TokenVerifier>> = Vec::new();
        let mut servers = Vec::new();
        let server = match config.oauth.builtin {
            true => {
                let server = Arc::new(AuthServer::open(&config.oauth, backend).await?);
                verifiers.push(server.issuer.clone());
                servers.push(config.oauth.base().to_string());
                Some(server)
            }
            false => None,
        };
        if let Some(issuers) = JwtIssuers::from_config(&config.oauth) {
            servers.extend(issuers.identifiers());
            verifiers.push(Arc::new(issuers));
        }
        if !verifiers.is_empty() {
            hub.accept_grants(verifiers);
        }
        Ok(OAuthState {
            base: Some(config.oauth.base().to_string()),
            server,
            servers,
        })
    }
}

/// An OAuth route.
enum Endpoint {
    /// Served whenever `[oauth]` is on.
    ResourceMetadata(Resource),
    /// A CORS preflight of the resource metadata.
    ResourcePreflight,
    /// Served only by the builtin authorization server.
    Builtin(Builtin),
}

/// The builtin authorization server's routes.
enum Builtin {
    ServerMetadata,
    /// A CORS preflight of a route taking this method.
    Preflight(&'static str),
    AuthorizePage,
    /// A POST, answered from its body.
    Post(Posted),
}

/// The builtin server's POST routes.
enum Posted {
    Register,
    AuthorizeDecide,
    Token,
    Revoke,
}

fn classify(method: &Method, segments: &[&str]) -> Result<Endpoint, Option<&'static str>> {
    use Builtin as B;
    use Endpoint as E;
    match (method.clone(), segments) {
        (Method::GET, [".well-known", "oauth-protected-resource"]) => Ok(E::ResourceMetadata(Resource::Api)),
        (Method::GET, [".well-known", "oauth-protected-resource", "mcp"]) => {
            Ok(E::ResourceMetadata(Resource::Mcp))
        }
        (Method::OPTIONS, [".well-known", "oauth-protected-resource"])
        | (Method::OPTIONS, [".well-known", "oauth-protected-resource", "mcp"]) => Ok(E::ResourcePreflight),
        (Method::GET, [".well-known", "oauth-authorization-server"]) => Ok(E::Builtin(B::ServerMetadata)),
        (Method::OPTIONS, [".well-known", "oauth-authorization-server"]) => {
            Ok(E::Builtin(B::Preflight("GET")))
        }
        (_, [".well-known", ..]) => Err(Some("GET")),
        (Method::POST, ["oauth", "register"]) => Ok(E::Builtin(B::Post(Posted::Register))),
        (Method::GET, ["oauth", "authorize"]) => Ok(E::Builtin(B::AuthorizePage)),
        (Method::POST, ["oauth", "authorize"]) => Ok(E::Builtin(B::Post(Posted::AuthorizeDecide))),
        (_, ["oauth", "authorize"]) => Err(Some("GET, POST")),
        (Method::POST, ["oauth", "token"]) => Ok(E::Builtin(B::Post(Posted::Token))),
        (Method::POST, ["oauth", "revoke"]) => Ok(E::Builtin(B::Post(Posted::Revoke))),
        // Not /oauth/authorize: its preflight gets 405 without CORS headers.
        (Method::OPTIONS, ["oauth", "register" | "token" | "revoke"]) => Ok(E::Builtin(B::Preflight("POST"))),
        (_, ["oauth", "register" | "token" | "revoke"]) => Err(Some("POST")),
        _ => Err(None),
    }
}

/// Answers a request under `/.well-known/` or `/oauth/`.
pub(crate) async fn handle(app: &App, req: Request<Incoming>, segments: &[&str]) -> Resp {
    let path = req.uri().path().to_string();
    let state = &app.oauth;
    let Some(base) = &state.base else {
        return respond::not_found(&path);
    };
    let endpoint = match classify(req.method(), segments) {
        Ok(e) => e,
        Err(Some(allowed)) => return respond::method_not_allowed(allowed),
        Err(None) => return respond::not_found(&path),
    };
    let route = match endpoint {
        Endpoint::ResourceMetadata(resource) => {
            return resource_metadata(base, &state.servers, resource);
        }
        Endpoint::ResourcePreflight => return cors::preflight("GET"),
        Endpoint::Builtin(route) => route,
    };
    let Some(server) = &state.server else {
        return respond::not_found(&path);
    };
    let posted = match route {
        Builtin::ServerMetadata => return server_metadata(base, server.settings.docs.enabled),
        Builtin::Preflight(method) => return cors::preflight(method),
        Builtin::AuthorizePage => return authorize::page(server, req.uri().query(), req.headers()).await,
        Builtin::Post(posted) => posted,
    };
    // Browser clients call every POST route but the consent form from their own origin.
    let cross_origin = !matches!(posted, Posted::AuthorizeDecide);
    let resp = post(app, server, req, posted).await;
    match cross_origin {
        true => cors::any_origin(resp),
        false => resp,
    }
}

/// Answers a POST route of the builtin server from its body.
async fn post(app: &App, server: &AuthServer, req: Request<Incoming>, posted: Posted) -> Resp {
    let (parts, body) = req.into_parts();
    let bytes = match app.body_parser().read(body).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    // A body that is not UTF-8 cannot hold valid parameters; NUL makes them fail to parse.
    let text = std::str::from_utf8(&bytes).unwrap_or("\u{0}");
    match posted {
        Posted::Register => token::register(server, &bytes).await,
        Posted::AuthorizeDecide => authorize::decide(server, &app.hub, &parts.headers, text).await,
        Posted::Token => token::token(server, &parts.headers, text).await,
        Posted::Revoke => token::revoke(server, text).await,
    }
}

/// `POST /api/oauth/signin-codes` for an authenticated `caller`.
pub(crate) async fn signin_code(app: &App, req: Request<Incoming>, caller: &Caller) -> Resp {
    let Some(server) = &app.oauth.server else {
        return respond::not_found(req.uri().path());
    };
    let bytes = match app.body_parser().read(req.into_body()).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    token::signin_code(server, &app.hub, caller, &bytes).await
}

/// RFC 9728 metadata of `resource`.
fn resource_metadata(base: &str, servers: &[String], resource: Resource) -> Resp {
    let scopes: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
    cors::any_origin(respond::json(
        StatusCode::OK,
        &json!({
            "resource": format!("{base}{}", resource.suffix()),
            "authorization_servers": servers,
            "scopes_supported": scopes,
            "bearer_methods_supported": ["header"],
            "resource_name": "wasmhub",
        }),
    ))
}

/// RFC 8414 metadata of the built-in server.
fn server_metadata(base: &str, documents: bool) -> Resp {
    let scopes: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
    cors::any_origin(respond::json(
        StatusCode::OK,
        &json!({
            "issuer": base,
            "authorization_endpoint": format!("{base}/oauth/authorize"),
            "token_endpoint": format!("{base}/oauth/token"),
            "registration_endpoint": format!("{base}/oauth/register"),
            "revocation_endpoint": format!("{base}/oauth/revoke"),
            "scopes_supported": scopes,
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "revocation_endpoint_auth_methods_supported": ["none"],
            "authorization_response_iss_parameter_supported": true,
            "client_id_metadata_document_supported": documents,
        }),
    ))
}
