//! The OAuth end-to-end tests' client side: a hub with `[oauth]` and the builtin
//! server (two tokens, `alice` with `calc.*` and the operator `ops`, the calc
//! plugin, `public_url` https://hub.example), and each step of the flow as a client
//! and a person in a browser would take it: registration, the consent page and its
//! form, sign-in codes, the token endpoint, and `initialize` on `/mcp`.

use super::client::{self, ClientResp};
use super::hub::{Hub, plugins, start_on};
use super::runtime::Scratch;
use http::Method;
use serde_json::{Value, json};
use std::net::SocketAddr;
use wasmhub::config::{Config, OAuthConfig, TokenConfig};
use wasmhub::storage::Backend;

pub const BASE: &str = "https://hub.example";
/// RFC 7636 Appendix B.
pub const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
pub const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
/// Registered with port 1; the app then listens on another port (RFC 8252 §7.3).
pub const REGISTERED: &str = "http://127.0.0.1:1/callback";
pub const REDIRECT: &str = "http://127.0.0.1:5555/callback";

pub fn config(dir: &Scratch, plugins_dir: &Scratch) -> Config {
    let token = |name: &str, allow: &str, operator: bool| {
        std::fs::write(dir.path(name), format!("secret-{name}")).unwrap();
        TokenConfig {
            name: name.into(),
            secret_file: Some(dir.path(name)),
            allow: vec![allow.into()],
            operator,
            ..TokenConfig::default()
        }
    };
    Config {
        tokens: vec![token("alice", "calc.*", false), token("ops", "*", true)],
        plugins_dir: plugins_dir.0.clone(),
        oauth: OAuthConfig {
            public_url: format!("{BASE}/"),
            builtin: true,
            registrations_per_minute: 5,
            ..OAuthConfig::default()
        },
        ..Config::default()
    }
}

pub async fn hub(tune: impl FnOnce(&mut Config)) -> (Hub, Scratch, Scratch) {
    let dir = Scratch::new("oauth");
    let plugins = plugins(&[], &["calc"]);
    let mut config = config(&dir, &plugins);
    tune(&mut config);
    let hub = start_on(config, Backend::temporary().unwrap()).await;
    (hub, dir, plugins)
}

pub async fn send(
    addr: SocketAddr,
    method: Method,
    path: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> ClientResp {
    let body = (!body.is_empty()).then(|| bytes::Bytes::from(body.to_string()));
    client::send(addr, method, path, body, headers).await
}

pub fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

pub fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// A query parameter of `url`, decoded.
pub fn param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    let raw = query
        .split('&')
        .find_map(|p| p.strip_prefix(&format!("{name}=")))?;
    let mut out = Vec::new();
    let b = raw.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(u8::from_str_radix(&raw[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(String::from_utf8(out).unwrap())
}

/// A GET of `path` without credentials.
pub async fn get(addr: SocketAddr, path: &str) -> ClientResp {
    send(addr, Method::GET, path, "", &[]).await
}

/// The authorization request of `client_id` for `redirect` and `scope`, as the
/// person's browser opens it.
pub async fn authorize_page(addr: SocketAddr, client_id: &str, redirect: &str, scope: &str) -> ClientResp {
    let query = form(&authorize_params(client_id, redirect, scope));
    get(addr, &format!("/oauth/authorize?{query}")).await
}

pub async fn register(addr: SocketAddr) -> ClientResp {
    let body = json!({ "client_name": "E2E <client>", "redirect_uris": [REGISTERED],
                       "token_endpoint_auth_method": "none" });
    send(addr, Method::POST, "/oauth/register", &body.to_string(), &[]).await
}

pub async fn client_id(addr: SocketAddr) -> String {
    let resp = register(addr).await;
    assert_eq!(resp.status, 201);
    let v = resp.json().await;
    assert_eq!(v["token_endpoint_auth_method"], "none");
    v["client_id"].as_str().unwrap().to_string()
}

pub fn authorize_params<'a>(
    client_id: &'a str,
    redirect: &'a str,
    scope: &'a str,
) -> Vec<(&'a str, &'a str)> {
    vec![
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", redirect),
        ("code_challenge", CHALLENGE),
        ("code_challenge_method", "S256"),
        ("scope", scope),
        ("state", "st/ate 1"),
        ("resource", "https://hub.example/mcp"),
    ]
}

/// The consent page's CSRF token (its cookie, which the form repeats).
pub fn csrf(page: &ClientResp) -> String {
    let cookie = page.header("set-cookie").expect("a CSRF cookie");
    let (pair, _) = cookie.split_once(';').unwrap();
    pair.split_once('=').unwrap().1.to_string()
}

/// GET the consent page, then POST its form with `credential`: the response.
pub async fn consent(addr: SocketAddr, params: &[(&str, &str)], credential: &str) -> ClientResp {
    let page = send(
        addr,
        Method::GET,
        &format!("/oauth/authorize?{}", form(params)),
        "",
        &[],
    )
    .await;
    assert_eq!(page.status, 200);
    let token = csrf(&page);
    let mut fields = params.to_vec();
    fields.extend([
        ("csrf", token.as_str()),
        ("credential", credential),
        ("decision", "approve"),
    ]);
    let cookie = format!("wasmhub_oauth_csrf={token}");
    send(
        addr,
        Method::POST,
        "/oauth/authorize",
        &form(&fields),
        &[("cookie", &cookie)],
    )
    .await
}

pub async fn signin_code(addr: SocketAddr, principal: &str) -> String {
    let body = json!({ "principal": principal }).to_string();
    let resp = send(
        addr,
        Method::POST,
        "/api/oauth/signin-codes",
        &body,
        &[("authorization", "Bearer secret-ops")],
    )
    .await;
    assert_eq!(resp.status, 201);
    resp.json().await["code"].as_str().unwrap().to_string()
}

/// A full authorization for `alice` with `scope`: the token endpoint's answer.
pub async fn grant(addr: SocketAddr, client_id: &str, scope: &str) -> Value {
    let code = signin_code(addr, "alice").await;
    let back = consent(addr, &authorize_params(client_id, REDIRECT, scope), &code).await;
    assert_eq!(back.status, 302);
    let location = back.header("location").unwrap().to_string();
    assert!(location.starts_with(REDIRECT), "{location}");
    assert_eq!(param(&location, "state").as_deref(), Some("st/ate 1"));
    assert_eq!(param(&location, "iss").as_deref(), Some(BASE));
    let code = param(&location, "code").unwrap();
    let body = form(&[
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("redirect_uri", REDIRECT),
        ("client_id", client_id),
        ("code_verifier", VERIFIER),
        ("resource", "https://hub.example/mcp"),
    ]);
    let resp = send(addr, Method::POST, "/oauth/token", &body, &[]).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("cache-control"), Some("no-store"));
    resp.json().await
}

pub async fn refresh(addr: SocketAddr, client_id: &str, token: &str) -> ClientResp {
    let body = form(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", token),
        ("client_id", client_id),
    ]);
    send(addr, Method::POST, "/oauth/token", &body, &[]).await
}

pub const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

/// `initialize` on `/mcp` with `token`.
pub async fn mcp_initialize(addr: SocketAddr, token: &str) -> ClientResp {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}}});
    let bearer = format!("Bearer {token}");
    send(
        addr,
        Method::POST,
        "/mcp",
        &init.to_string(),
        &[ACCEPT, ("authorization", &bearer)],
    )
    .await
}

pub fn challenge(resp: &ClientResp) -> &str {
    resp.header("www-authenticate").expect("a challenge")
}
