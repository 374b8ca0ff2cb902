//! OAuth 2.1 through the built-in authorization server, over HTTP on loopback:
//! discovery documents and the exact challenges (401 and 403), registration, the
//! consent page and its form, the code exchange, a call through `/mcp` with the
//! grant's token recorded under its principal and client, refresh rotation whose
//! replay revokes the family, a registration flood (429), requests that must never
//! redirect, the hub unchanged with `[oauth]` off, and (feature `postgres`) a
//! token issued by one replica accepted by another.

use crate::support::client::{self, ClientResp};
use crate::support::hub::{Hub, plugins, start_on};
use crate::support::runtime::Scratch;
use http::Method;
use serde_json::{Value, json};
use std::net::SocketAddr;
use wasmhub::config::{Config, OAuthConfig, TokenConfig};
use wasmhub::storage::Backend;

const BASE: &str = "https://hub.example";
/// RFC 7636 Appendix B.
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
/// Registered with port 1; the app then listens on another port (RFC 8252 §7.3).
const REGISTERED: &str = "http://127.0.0.1:1/callback";
const REDIRECT: &str = "http://127.0.0.1:5555/callback";

fn config(dir: &Scratch, plugins_dir: &Scratch) -> Config {
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

async fn hub(tune: impl FnOnce(&mut Config)) -> (Hub, Scratch, Scratch) {
    let dir = Scratch::new("oauth");
    let plugins = plugins(&[], &["calc"]);
    let mut config = config(&dir, &plugins);
    tune(&mut config);
    let hub = start_on(config, Backend::temporary().unwrap()).await;
    (hub, dir, plugins)
}

async fn send(
    addr: SocketAddr,
    method: Method,
    path: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> ClientResp {
    let body = (!body.is_empty()).then(|| bytes::Bytes::from(body.to_string()));
    client::send(addr, method, path, body, headers).await
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// A query parameter of `url`, decoded.
fn param(url: &str, name: &str) -> Option<String> {
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

async fn register(addr: SocketAddr) -> ClientResp {
    let body = json!({ "client_name": "E2E <client>", "redirect_uris": [REGISTERED],
                       "token_endpoint_auth_method": "none" });
    send(addr, Method::POST, "/oauth/register", &body.to_string(), &[]).await
}

async fn client_id(addr: SocketAddr) -> String {
    let resp = register(addr).await;
    assert_eq!(resp.status, 201);
    let v = resp.json().await;
    assert_eq!(v["token_endpoint_auth_method"], "none");
    v["client_id"].as_str().unwrap().to_string()
}

fn authorize_params<'a>(client_id: &'a str, redirect: &'a str, scope: &'a str) -> Vec<(&'a str, &'a str)> {
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
fn csrf(page: &ClientResp) -> String {
    let cookie = page.header("set-cookie").expect("a CSRF cookie");
    let (pair, _) = cookie.split_once(';').unwrap();
    pair.split_once('=').unwrap().1.to_string()
}

/// GET the consent page, then POST its form with `credential`: the response.
async fn consent(addr: SocketAddr, params: &[(&str, &str)], credential: &str) -> ClientResp {
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

async fn signin_code(addr: SocketAddr, principal: &str) -> String {
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
async fn grant(addr: SocketAddr, client_id: &str, scope: &str) -> Value {
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

async fn refresh(addr: SocketAddr, client_id: &str, token: &str) -> ClientResp {
    let body = form(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", token),
        ("client_id", client_id),
    ]);
    send(addr, Method::POST, "/oauth/token", &body, &[]).await
}

const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

/// `initialize` on `/mcp` with `token`.
async fn mcp_initialize(addr: SocketAddr, token: &str) -> ClientResp {
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

fn challenge(resp: &ClientResp) -> &str {
    resp.header("www-authenticate").expect("a challenge")
}

#[tokio::test]
async fn discovery_consent_and_a_call_through_mcp_recorded_with_principal_and_client() {
    let (hub, _dir, _plugins) = hub(|_| {}).await;
    let addr = hub.addr;
    let prm = send(
        addr,
        Method::GET,
        "/.well-known/oauth-protected-resource/mcp",
        "",
        &[],
    )
    .await
    .json()
    .await;
    assert_eq!(prm["resource"], "https://hub.example/mcp");
    assert_eq!(prm["authorization_servers"], json!([BASE]));
    assert_eq!(prm["scopes_supported"], json!(["hub:tools", "chat", "operator"]));
    assert_eq!(prm["bearer_methods_supported"], json!(["header"]));
    let root = send(
        addr,
        Method::GET,
        "/.well-known/oauth-protected-resource",
        "",
        &[],
    )
    .await
    .json()
    .await;
    assert_eq!(root["resource"], BASE);
    let meta = send(
        addr,
        Method::GET,
        "/.well-known/oauth-authorization-server",
        "",
        &[],
    )
    .await
    .json()
    .await;
    assert_eq!(meta["issuer"], BASE);
    assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(
        meta["registration_endpoint"],
        "https://hub.example/oauth/register"
    );
    assert_eq!(meta["authorization_response_iss_parameter_supported"], true);

    // 401s point to the metadata of the route's resource and name its scope.
    let bare = send(addr, Method::POST, "/mcp", "{}", &[ACCEPT]).await;
    assert_eq!(bare.status, 401);
    assert_eq!(
        challenge(&bare),
        "Bearer resource_metadata=\"https://hub.example/.well-known/oauth-protected-resource/mcp\", scope=\"hub:tools\""
    );
    let api = send(addr, Method::GET, "/v1/models", "", &[]).await;
    assert_eq!(
        challenge(&api),
        "Bearer resource_metadata=\"https://hub.example/.well-known/oauth-protected-resource\", scope=\"chat\""
    );
    let unknown = mcp_initialize(addr, "wh_at_nope").await;
    assert_eq!(unknown.status, 401);
    assert_eq!(
        challenge(&unknown),
        "Bearer error=\"invalid_token\", error_description=\"the access token is unknown\", \
         resource_metadata=\"https://hub.example/.well-known/oauth-protected-resource/mcp\", scope=\"hub:tools\""
    );

    let client = client_id(addr).await;
    let page = send(
        addr,
        Method::GET,
        &format!(
            "/oauth/authorize?{}",
            form(&authorize_params(&client, REDIRECT, "hub:tools"))
        ),
        "",
        &[],
    )
    .await;
    assert_eq!(page.status, 200);
    assert!(
        page.header("content-security-policy")
            .unwrap()
            .contains("frame-ancestors 'none'")
    );
    let html = String::from_utf8(page.bytes().await.to_vec()).unwrap();
    assert!(
        html.contains("E2E &lt;client&gt;") && html.contains("127.0.0.1") && html.contains("hub:tools"),
        "{html}"
    );

    let tokens = grant(addr, &client, "hub:tools").await;
    assert_eq!(tokens["scope"], "hub:tools");
    let access = tokens["access_token"].as_str().unwrap();
    let init = mcp_initialize(addr, access).await;
    assert_eq!(init.status, 200);
    let session = init.header("mcp-session-id").unwrap().to_string();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hub_call",
        "arguments": {"calls": [{"tool": "calc.eval", "input": {"expression": "6*7"}}]}}});
    let bearer = format!("Bearer {access}");
    let answer = send(
        addr,
        Method::POST,
        "/mcp",
        &call.to_string(),
        &[
            ACCEPT,
            ("authorization", &bearer),
            ("mcp-session-id", &session),
            ("mcp-protocol-version", "2025-11-25"),
        ],
    )
    .await;
    assert_eq!(answer.status, 200);
    let text = String::from_utf8(answer.bytes().await.to_vec()).unwrap();
    assert!(text.contains("42"), "{text}");
    let calls = send(
        addr,
        Method::GET,
        "/api/calls?limit=10",
        "",
        &[("authorization", "Bearer secret-ops")],
    )
    .await;
    let calls = calls.json().await;
    let record = calls["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["tool"] == "calc.eval")
        .unwrap()
        .clone();
    assert_eq!(record["caller"], "alice");
    assert_eq!(record["client"], client.as_str());

    // The token is bound to /mcp: the API root is another audience.
    let elsewhere = send(
        addr,
        Method::POST,
        "/api/hub/list",
        "{}",
        &[("authorization", &bearer)],
    )
    .await;
    assert_eq!(elsewhere.status, 401);
    assert!(
        challenge(&elsewhere)
            .contains("error_description=\"the access token was issued for another resource\"")
    );
    // A grant without hub:tools gets 403 naming the scope.
    let chat_only = grant(addr, &client, "chat").await;
    let narrow = mcp_initialize(addr, chat_only["access_token"].as_str().unwrap()).await;
    assert_eq!(narrow.status, 403);
    assert_eq!(
        challenge(&narrow),
        "Bearer error=\"insufficient_scope\", resource_metadata=\"https://hub.example/.well-known/oauth-protected-resource/mcp\", scope=\"hub:tools\""
    );
    // Static tokens keep working beside OAuth.
    assert_eq!(mcp_initialize(addr, "secret-alice").await.status, 200);
}

#[tokio::test]
async fn a_replayed_refresh_token_revokes_its_family() {
    let (hub, _dir, _plugins) = hub(|_| {}).await;
    let addr = hub.addr;
    let client = client_id(addr).await;
    let first = grant(addr, &client, "hub:tools").await;
    let first_refresh = first["refresh_token"].as_str().unwrap();
    let second = refresh(addr, &client, first_refresh).await;
    assert_eq!(second.status, 200);
    let second = second.json().await;
    let second_access = second["access_token"].as_str().unwrap();
    assert_eq!(mcp_initialize(addr, second_access).await.status, 200);
    let replay = refresh(addr, &client, first_refresh).await;
    assert_eq!(replay.status, 400);
    let replay = replay.json().await;
    assert_eq!(replay["error"], "invalid_grant");
    assert!(
        replay["error_description"]
            .as_str()
            .unwrap()
            .contains("already used"),
        "{replay}"
    );
    let revoked = mcp_initialize(addr, second_access).await;
    assert_eq!(revoked.status, 401);
    assert!(challenge(&revoked).contains("error_description=\"the access token was revoked\""));
    let newest = refresh(addr, &client, second["refresh_token"].as_str().unwrap()).await;
    assert_eq!(
        newest.status, 400,
        "the newest refresh token of the family is revoked too"
    );
}

#[tokio::test]
async fn a_registration_flood_gets_429() {
    let (hub, _dir, _plugins) = hub(|_| {}).await;
    let mut statuses = Vec::new();
    for _ in 0..8 {
        let resp = register(hub.addr).await;
        if resp.status == 429 {
            assert_eq!(resp.header("retry-after"), Some("60"));
            let body = resp.json().await;
            assert!(
                body["error_description"]
                    .as_str()
                    .unwrap()
                    .contains("oauth.registrations_per_minute")
            );
            statuses.push(429);
        } else {
            statuses.push(resp.status.as_u16());
        }
    }
    assert_eq!(statuses, [201, 201, 201, 201, 201, 429, 429, 429]);
}

#[tokio::test]
async fn a_wrong_redirect_uri_or_client_never_redirects() {
    let (hub, _dir, _plugins) = hub(|_| {}).await;
    let addr = hub.addr;
    let client = client_id(addr).await;
    for (client, redirect) in [
        (client.as_str(), "https://evil.example/callback"),
        (client.as_str(), "http://127.0.0.1:5555/other"),
        (client.as_str(), "http://localhost:5555/callback"),
        ("client_unknown", REDIRECT),
    ] {
        let query = form(&authorize_params(client, redirect, "hub:tools"));
        let page = send(addr, Method::GET, &format!("/oauth/authorize?{query}"), "", &[]).await;
        assert_eq!(page.status, 400, "{redirect}");
        assert!(page.header("location").is_none(), "{redirect}");
        // The form posted straight (no page, no cookie) is refused without a redirect too.
        let mut fields = authorize_params(client, redirect, "hub:tools");
        fields.extend([
            ("csrf", "forged"),
            ("decision", "approve"),
            ("credential", "secret-alice"),
        ]);
        let cookie = "wasmhub_oauth_csrf=forged";
        let post = send(
            addr,
            Method::POST,
            "/oauth/authorize",
            &form(&fields),
            &[("cookie", cookie)],
        )
        .await;
        assert_eq!(post.status, 400, "{redirect}");
        assert!(post.header("location").is_none(), "{redirect}");
    }
    // A form whose CSRF token differs from the cookie: 403, no redirect.
    let mut fields = authorize_params(&client, REDIRECT, "hub:tools");
    fields.extend([
        ("csrf", "a"),
        ("decision", "approve"),
        ("credential", "secret-alice"),
    ]);
    let forged = send(
        addr,
        Method::POST,
        "/oauth/authorize",
        &form(&fields),
        &[("cookie", "wasmhub_oauth_csrf=b")],
    )
    .await;
    assert_eq!(forged.status, 403);
    assert!(forged.header("location").is_none());
    // A wrong sign-in code shows the page again; a hub token signs in too.
    let wrong = consent(
        addr,
        &authorize_params(&client, REDIRECT, "hub:tools"),
        "wh_si_wrong",
    )
    .await;
    assert_eq!(wrong.status, 401);
    assert!(wrong.header("location").is_none());
    let with_token = consent(
        addr,
        &authorize_params(&client, REDIRECT, "hub:tools"),
        "secret-alice",
    )
    .await;
    assert_eq!(with_token.status, 302);
    // Verified client and redirect URI, but no PKCE: the error goes back to the client.
    let mut no_pkce = authorize_params(&client, REDIRECT, "hub:tools");
    no_pkce.retain(|(k, _)| !k.starts_with("code_challenge"));
    let back = send(
        addr,
        Method::GET,
        &format!("/oauth/authorize?{}", form(&no_pkce)),
        "",
        &[],
    )
    .await;
    assert_eq!(back.status, 302);
    let location = back.header("location").unwrap();
    assert!(location.starts_with(REDIRECT));
    assert_eq!(param(location, "error").as_deref(), Some("invalid_request"));
}

#[tokio::test]
async fn with_oauth_off_nothing_changes() {
    let (hub, _dir, _plugins) = hub(|c| c.oauth = OAuthConfig::default()).await;
    let addr = hub.addr;
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/oauth/authorize",
    ] {
        assert_eq!(send(addr, Method::GET, path, "", &[]).await.status, 404, "{path}");
    }
    assert_eq!(register(addr).await.status, 404);
    let bare = send(addr, Method::POST, "/mcp", "{}", &[ACCEPT]).await;
    assert_eq!(challenge(&bare), "Bearer realm=\"wasmhub\"");
    let wrong = mcp_initialize(addr, "wh_at_nope").await;
    assert_eq!(
        challenge(&wrong),
        "Bearer realm=\"wasmhub\", error=\"invalid_token\""
    );
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn a_token_issued_on_one_replica_works_on_another() {
    use wasmhub::config::StorageBackend;
    let dir = Scratch::new("oauth");
    let plugins = plugins(&[], &["calc"]);
    let mut config = config(&dir, &plugins);
    config.storage.backend = StorageBackend::Postgres;
    config.storage.url_env = "WASMHUB_TEST_DATABASE_URL".into();
    let open = || Backend::open(&config);
    let (a, b) = (
        open().await.expect("the test database"),
        open().await.expect("the test database"),
    );
    let (a, b) = (
        start_on(config.clone(), a).await,
        start_on(config.clone(), b).await,
    );
    let client = client_id(a.addr).await;
    let tokens = grant(a.addr, &client, "hub:tools").await;
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(mcp_initialize(b.addr, access).await.status, 200);
    // Rotated on b; the old refresh token replayed on a revokes the family on both.
    let rotated = refresh(b.addr, &client, tokens["refresh_token"].as_str().unwrap()).await;
    assert_eq!(rotated.status, 200);
    let rotated = rotated.json().await;
    assert_eq!(
        refresh(a.addr, &client, tokens["refresh_token"].as_str().unwrap())
            .await
            .status,
        400
    );
    assert_eq!(
        mcp_initialize(b.addr, rotated["access_token"].as_str().unwrap())
            .await
            .status,
        401
    );
}

/// A client's metadata document served on loopback; counts the fetches.
async fn metadata_document() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/client.json", listener.local_addr().unwrap());
    let body =
        json!({ "client_id": url, "client_name": "Doc client", "redirect_uris": [REGISTERED] }).to_string();
    let fetches = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = fetches.clone();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(answer.as_bytes()).await;
        }
    });
    (url, fetches)
}

#[tokio::test]
async fn a_client_id_metadata_document_names_the_client() {
    let (url, fetches) = metadata_document().await;
    let (docs_hub, _dir, _plugins) = hub(|c| {
        // The document is on loopback over http: only for tests.
        c.oauth.client_metadata_private = true;
        c.oauth.client_metadata_http = true;
    })
    .await;
    let meta = send(
        docs_hub.addr,
        Method::GET,
        "/.well-known/oauth-authorization-server",
        "",
        &[],
    )
    .await
    .json()
    .await;
    assert_eq!(meta["client_id_metadata_document_supported"], true);
    let page = send(
        docs_hub.addr,
        Method::GET,
        &format!(
            "/oauth/authorize?{}",
            form(&authorize_params(&url, REDIRECT, "hub:tools"))
        ),
        "",
        &[],
    )
    .await;
    assert_eq!(page.status, 200);
    let html = String::from_utf8(page.bytes().await.to_vec()).unwrap();
    assert!(html.contains("Doc client"), "{html}");
    let tokens = grant(docs_hub.addr, &url, "hub:tools").await;
    assert_eq!(
        mcp_initialize(docs_hub.addr, tokens["access_token"].as_str().unwrap())
            .await
            .status,
        200
    );
    assert_eq!(
        fetches.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "fetched once, then cached"
    );
    // A redirect URI the document does not list never redirects.
    let query = form(&authorize_params(&url, "https://evil.example/cb", "hub:tools"));
    let wrong = send(
        docs_hub.addr,
        Method::GET,
        &format!("/oauth/authorize?{query}"),
        "",
        &[],
    )
    .await;
    assert_eq!(wrong.status, 400);
    assert!(wrong.header("location").is_none());

    // By default: https only, and public addresses only.
    let (strict, _dir, _plugins) = hub(|_| {}).await;
    let https = url.replacen("http://", "https://", 1);
    for (client, needle) in [
        (url.as_str(), "https URL"),
        (https.as_str(), "oauth.client_metadata_private"),
    ] {
        let query = form(&authorize_params(client, REDIRECT, "hub:tools"));
        let refused = send(
            strict.addr,
            Method::GET,
            &format!("/oauth/authorize?{query}"),
            "",
            &[],
        )
        .await;
        assert_eq!(refused.status, 400);
        assert!(refused.header("location").is_none());
        let html = String::from_utf8(refused.bytes().await.to_vec()).unwrap();
        assert!(html.contains(needle), "{client}: {html}");
    }
    assert_eq!(
        fetches.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "nothing fetched for refused URLs"
    );
}
