//! OAuth clients beyond one registered client on one hub: a client identified by
//! its metadata document (fetched once from loopback, then cached; refused by
//! default for http and for private addresses, without a redirect), and (feature
//! `postgres`) a token issued by one replica accepted by another, whose refresh
//! replay on the first revokes it on the second; browser clients calling the
//! discovery, registration, token and revocation endpoints from another origin
//! (CORS), but not the consent page.

use crate::support::oauth::*;
use http::Method;
use serde_json::json;
#[cfg(feature = "postgres")]
use {
    crate::support::hub::{plugins, start_on},
    crate::support::runtime::Scratch,
    wasmhub::storage::Backend,
};

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
    let meta = get(docs_hub.addr, "/.well-known/oauth-authorization-server")
        .await
        .json()
        .await;
    assert_eq!(meta["client_id_metadata_document_supported"], true);
    let page = authorize_page(docs_hub.addr, &url, REDIRECT, "hub:tools").await;
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
    let wrong = authorize_page(docs_hub.addr, &url, "https://evil.example/cb", "hub:tools").await;
    assert_eq!(wrong.status, 400);
    assert!(wrong.header("location").is_none());

    // By default: https only, and public addresses only.
    let (strict, _dir, _plugins) = hub(|_| {}).await;
    let https = url.replacen("http://", "https://", 1);
    for (client, needle) in [
        (url.as_str(), "https URL"),
        (https.as_str(), "oauth.client_metadata_private"),
    ] {
        let refused = authorize_page(strict.addr, client, REDIRECT, "hub:tools").await;
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

#[tokio::test]
async fn browser_clients_may_call_mcp_discovery_registration_token_and_revoke_cross_origin_but_not_the_consent_page()
 {
    let (on, _dir, _plugins) = hub(|_| {}).await;
    let addr = on.addr;
    let origin = ("origin", "http://127.0.0.1:6274");
    for (path, method, asked) in [
        (
            "/.well-known/oauth-protected-resource/mcp",
            "GET",
            "mcp-protocol-version",
        ),
        (
            "/.well-known/oauth-protected-resource",
            "GET",
            "mcp-protocol-version",
        ),
        (
            "/.well-known/oauth-authorization-server",
            "GET",
            "mcp-protocol-version",
        ),
        ("/oauth/register", "POST", "content-type"),
        ("/oauth/token", "POST", "content-type"),
        ("/oauth/revoke", "POST", "content-type"),
        ("/mcp", "GET, POST, DELETE", "mcp-session-id"),
    ] {
        let headers = [
            origin,
            ("access-control-request-method", method),
            ("access-control-request-headers", asked),
        ];
        let pre = send(addr, Method::OPTIONS, path, "", &headers).await;
        assert_eq!(pre.status, 204, "{path}");
        assert_eq!(pre.header("access-control-allow-origin"), Some("*"), "{path}");
        assert_eq!(pre.header("access-control-allow-methods"), Some(method), "{path}");
        assert_eq!(
            pre.header("access-control-allow-headers"),
            Some("authorization, content-type, accept, mcp-protocol-version, mcp-session-id, last-event-id"),
            "{path}"
        );
        assert_eq!(pre.header("access-control-max-age"), Some("600"), "{path}");
        assert_eq!(pre.header("access-control-allow-credentials"), None, "{path}");
    }
    // The actual requests: answers (errors too) readable from any origin.
    let body = json!({"client_name": "Browser", "redirect_uris": [REGISTERED], "token_endpoint_auth_method": "none"});
    let json_type = ("content-type", "application/json");
    let reg = send(
        addr,
        Method::POST,
        "/oauth/register",
        &body.to_string(),
        &[origin, json_type],
    )
    .await;
    assert_eq!(reg.status, 201);
    assert_eq!(reg.header("access-control-allow-origin"), Some("*"));
    assert_eq!(
        reg.header("access-control-expose-headers"),
        Some("mcp-session-id, mcp-protocol-version, www-authenticate, retry-after")
    );
    // /mcp without a token: the 401 and its WWW-Authenticate (where to find the
    // authorization server) readable by the page's script.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}});
    let mcp = send(
        addr,
        Method::POST,
        "/mcp",
        &init.to_string(),
        &[origin, ("content-type", "application/json")],
    )
    .await;
    assert_eq!(mcp.status, 401);
    assert!(
        mcp.header("www-authenticate")
            .is_some_and(|h| h.contains("resource_metadata"))
    );
    assert_eq!(mcp.header("access-control-allow-origin"), Some("*"));
    // An origin the guard does not accept gets no further than 403, preflight or not.
    let foreign = ("origin", "https://evil.example");
    let pre = send(
        addr,
        Method::OPTIONS,
        "/mcp",
        "",
        &[foreign, ("access-control-request-method", "POST")],
    )
    .await;
    assert_eq!(pre.status, 403);
    assert_eq!(pre.header("access-control-allow-origin"), None);
    let form_type = ("content-type", "application/x-www-form-urlencoded");
    let bad = form(&[("grant_type", "authorization_code"), ("code", "wh_ac_nope")]);
    let token = send(addr, Method::POST, "/oauth/token", &bad, &[origin, form_type]).await;
    assert_eq!(token.status, 401, "no client_id: invalid_client");
    assert_eq!(token.header("access-control-allow-origin"), Some("*"));
    let revoke = send(
        addr,
        Method::POST,
        "/oauth/revoke",
        "token=wh_at_nope",
        &[origin, form_type],
    )
    .await;
    assert_eq!(revoke.status, 200);
    assert_eq!(revoke.header("access-control-allow-origin"), Some("*"));
    let meta = send(
        addr,
        Method::GET,
        "/.well-known/oauth-authorization-server",
        "",
        &[origin],
    )
    .await;
    assert_eq!(meta.header("access-control-allow-origin"), Some("*"));
    // The consent page and its form stay same-origin: no preflight, no CORS headers.
    let pre = send(
        addr,
        Method::OPTIONS,
        "/oauth/authorize",
        "",
        &[origin, ("access-control-request-method", "POST")],
    )
    .await;
    assert_eq!(pre.status, 405);
    assert_eq!(pre.header("access-control-allow-origin"), None);
    let client = client_id(addr).await;
    let page = authorize_page(addr, &client, REDIRECT, "hub:tools").await;
    assert_eq!(page.status, 200);
    assert_eq!(page.header("access-control-allow-origin"), None);
    let decide = send(
        addr,
        Method::POST,
        "/oauth/authorize",
        "csrf=x",
        &[origin, form_type],
    )
    .await;
    assert_eq!(decide.header("access-control-allow-origin"), None);
    // With the builtin server off, its routes (and their preflights) do not exist.
    let (off, _dir2, _plugins2) = hub(|c| c.oauth.builtin = false).await;
    let pre = send(off.addr, Method::OPTIONS, "/oauth/token", "", &[origin]).await;
    assert_eq!(pre.status, 404);
}
