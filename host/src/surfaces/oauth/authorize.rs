//! `GET /oauth/authorize` (the sign-in and consent page) and `POST
//! /oauth/authorize` (its form): the authorization code flow with PKCE S256.
//!
//! Until the client and the redirect URI are verified, every problem is an error
//! page, never a redirect (no open redirector). After that, problems go back to the
//! client as `error` parameters, with `state` and the issuer (`iss`, RFC 9207).
//! The form carries a CSRF token that must equal the page's cookie (SameSite
//! Strict, HttpOnly), and the person proves who they are with a one-time sign-in
//! code or a hub token; the grant runs as that principal.

use super::form::{self, Params};
use super::page::{self, CSRF_COOKIE, Consent};
use crate::hub::{Hub, Resource, Scope, Scopes};
use crate::oauth::clients::{ClientInfo, LookupError};
use crate::oauth::grants::{CodeRequest, Issued};
use crate::oauth::{AuthServer, Issuer, pkce, redirect};
use crate::surfaces::body::Body;
use crate::surfaces::respond::Resp;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};

/// A verified authorization request.
struct Authz {
    client: ClientInfo,
    /// The redirect URI as presented (a loopback one with the app's port).
    redirect_uri: String,
    /// Whether the request named the redirect URI (else the one registered).
    redirect_named: bool,
    challenge: String,
    scopes: Scopes,
    resource: Resource,
}

/// The scopes of a request that names none.
fn default_scopes() -> Scopes {
    [Scope::HubTools, Scope::Chat].into_iter().collect()
}

/// `GET /oauth/authorize?…`: the consent page for a valid request.
pub(super) async fn page(server: &AuthServer, query: Option<&str>, headers: &HeaderMap) -> Resp {
    let params = match Params::parse(query.unwrap_or("")) {
        Ok(p) => p,
        Err(e) => return page::error(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    let authz = match verify(server, &params).await {
        Ok(a) => a,
        Err(resp) => return resp,
    };
    // Another tab's token stays valid: reuse it rather than break that tab's form.
    let csrf = cookie(headers, CSRF_COOKIE)
        .filter(|c| c.len() >= 32)
        .map(str::to_string)
        .unwrap_or_else(|| crate::ids::new_id("csrf"));
    consent(server, &authz, &params, &csrf, None)
}

/// `POST /oauth/authorize`: the person's decision.
pub(super) async fn decide(server: &AuthServer, hub: &Hub, headers: &HeaderMap, body: &str) -> Resp {
    let params = match Params::parse(body) {
        Ok(p) => p,
        Err(e) => return page::error(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    let expected = cookie(headers, CSRF_COOKIE).unwrap_or("");
    let presented = params.get("csrf").unwrap_or("");
    if expected.is_empty() || !same(expected, presented) {
        return page::error(
            StatusCode::FORBIDDEN,
            "the sign-in form expired or was not sent by this page; start again from the application",
        );
    }
    let authz = match verify(server, &params).await {
        Ok(a) => a,
        Err(resp) => return resp,
    };
    let back = |code: &str, why: &str| error_redirect(server, &authz.redirect_uri, &params, code, why);
    if params.get("decision") != Some("approve") {
        return back("access_denied", "the person denied the request");
    }
    let retry = |why: &str| consent(server, &authz, &params, presented, Some(why));
    let Some(credential) = params.get("credential").map(str::trim) else {
        return retry("Enter a sign-in code or a hub token.");
    };
    let principal = match server.signin.redeem(credential).await {
        Ok(Some(p)) => Some(p),
        Ok(None) => hub.configured_token(credential).map(|c| c.name().to_string()),
        Err(e) => {
            crate::error!("oauth: cannot read a sign-in code: {e}");
            return page::error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the hub's storage failed; try again",
            );
        }
    };
    let Some(principal) = principal else {
        return retry("That sign-in code or token is not valid (a sign-in code works once).");
    };
    let Some(policy) = hub.policy(&principal) else {
        return retry("That sign-in code is for a principal this hub no longer has.");
    };
    let scopes = match policy.is_operator() {
        true => authz.scopes,
        false => authz.scopes.without(Scope::Operator),
    };
    if scopes.is_empty() {
        return back(
            "invalid_scope",
            "this principal may not have the scopes asked for",
        );
    }
    let issued = Issued {
        principal: principal.clone(),
        client_id: authz.client.client_id.clone(),
        scopes: scopes.to_string(),
        resource: server.settings.resource(authz.resource),
        family: Issuer::new_family(),
    };
    let request = CodeRequest {
        issued,
        redirect_uri: authz.redirect_uri.clone(),
        redirect_named: authz.redirect_named,
        challenge: authz.challenge.clone(),
    };
    let code = match server.issuer.issue_code(request).await {
        Ok(code) => code,
        Err(e) => {
            crate::error!("oauth: cannot store an authorization code: {e}");
            return back("server_error", "the hub's storage failed");
        }
    };
    if let Err(e) = server.clients.mark_used(&authz.client).await {
        crate::warn!(
            "oauth: cannot mark client {} as used: {e}",
            authz.client.client_id
        );
    }
    crate::info!(
        "oauth: {principal} granted {scopes} to client {} ({:?})",
        authz.client.client_id,
        authz.client.client_name
    );
    let mut back_params = vec![("code", code.as_str())];
    if let Some(state) = params.get("state") {
        back_params.push(("state", state));
    }
    back_params.push(("iss", server.settings.issuer()));
    redirect_to(&form::with_query(&authz.redirect_uri, &back_params))
}

/// The request checked: client and redirect URI first (errors are pages), then
/// the rest (errors go back to the client).
async fn verify(server: &AuthServer, params: &Params) -> Result<Authz, Resp> {
    let Some(client_id) = params.get("client_id") else {
        return Err(page::error(
            StatusCode::BAD_REQUEST,
            "the request names no client_id",
        ));
    };
    let client = match server.clients.get(client_id).await {
        Ok(Some(c)) => c,
        Ok(None) => {
            return Err(page::error(
                StatusCode::BAD_REQUEST,
                "this client is not registered with the hub (or its registration expired)",
            ));
        }
        Err(e @ LookupError::Document { .. }) => {
            crate::info!("oauth: authorization refused: {e}");
            return Err(page::error(StatusCode::BAD_REQUEST, &e.to_string()));
        }
        Err(e) => {
            crate::error!("oauth: cannot read client {client_id}: {e}");
            return Err(page::error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the hub's storage failed; try again",
            ));
        }
    };
    let presented = match params.get("redirect_uri") {
        Some(uri) => uri.to_string(),
        // OAuth 2.1 §4.1.1: optional only when exactly one is registered.
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => {
            return Err(page::error(
                StatusCode::BAD_REQUEST,
                "the request names no redirect_uri",
            ));
        }
    };
    if redirect::find(&client.redirect_uris, &presented).is_none() {
        return Err(page::error(
            StatusCode::BAD_REQUEST,
            "the redirect URI is not one this client registered",
        ));
    }
    let back = |code: &str, why: &str| error_redirect(server, &presented, params, code, why);
    if params.get("response_type") != Some("code") {
        return Err(back(
            "unsupported_response_type",
            "only response_type=code is supported",
        ));
    }
    let challenge = pkce::challenge(params.get("code_challenge"), params.get("code_challenge_method"))
        .map_err(|e| back("invalid_request", &e.to_string()))?;
    let scopes = match params.get("scope") {
        None => default_scopes(),
        Some(s) => Scopes::parse(s).map_err(|e| back("invalid_scope", &e.to_string()))?,
    };
    if scopes.is_empty() {
        return Err(back("invalid_scope", "no scope asked for"));
    }
    let resource = match params.get("resource") {
        None => Resource::Mcp,
        Some(r) => server
            .settings
            .resource_named(r)
            .ok_or_else(|| back("invalid_target", "the resource is not this hub's"))?,
    };
    Ok(Authz {
        client,
        redirect_uri: presented,
        redirect_named: params.get("redirect_uri").is_some(),
        challenge,
        scopes,
        resource,
    })
}

fn consent(server: &AuthServer, authz: &Authz, params: &Params, csrf: &str, error: Option<&str>) -> Resp {
    let form_action = format!("'self' {}", origin(&authz.redirect_uri));
    page::consent(&Consent {
        client_name: &authz.client.client_name,
        client_id: &authz.client.client_id,
        redirect_host: &redirect::shown_host(&authz.redirect_uri),
        scopes: authz.scopes,
        params,
        csrf,
        error,
        form_action: &form_action,
        secure: server.settings.base.starts_with("https://"),
    })
}

/// The client's verified redirect URI with an OAuth error (RFC 6749 §4.1.2.1).
fn error_redirect(server: &AuthServer, uri: &str, params: &Params, code: &str, why: &str) -> Resp {
    let mut back = vec![("error", code), ("error_description", why)];
    if let Some(state) = params.get("state") {
        back.push(("state", state));
    }
    back.push(("iss", server.settings.issuer()));
    redirect_to(&form::with_query(uri, &back))
}

fn redirect_to(location: &str) -> Resp {
    let mut resp = Response::new(Body::empty());
    *resp.status_mut() = StatusCode::FOUND;
    if let Ok(v) = HeaderValue::try_from(location) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// The CSP source of `uri`'s origin: `scheme://host:port`, or `scheme:` for an
/// app's private-use scheme.
fn origin(uri: &str) -> String {
    match uri.split_once("://") {
        Some((scheme, rest)) if scheme == "http" || scheme == "https" => {
            let end = rest.find(['/', '?']).unwrap_or(rest.len());
            format!("{scheme}://{}", &rest[..end])
        }
        Some((scheme, _)) => format!("{scheme}:"),
        None => "'none'".into(),
    }
}

/// The value of cookie `name`.
fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Equal strings, compared in full.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_action_allows_the_redirect_origin_only() {
        assert_eq!(origin("http://127.0.0.1:5000/cb?x=1"), "http://127.0.0.1:5000");
        assert_eq!(
            origin("https://claude.ai/api/mcp/auth_callback"),
            "https://claude.ai"
        );
        assert_eq!(origin("cursor://anysphere/cb"), "cursor:");
    }

    #[test]
    fn cookies_are_found_by_name() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            "a=1; wasmhub_oauth_csrf=xyz; b=2".parse().unwrap(),
        );
        assert_eq!(cookie(&h, CSRF_COOKIE), Some("xyz"));
        assert_eq!(cookie(&h, "c"), None);
        assert!(same("abc", "abc") && !same("abc", "abd") && !same("abc", "ab"));
    }
}
