//! `GET /console`, the operator console, over the real HTTP server: the embedded
//! page with the chat page's security headers (and `no-store`), behind the same
//! bearer check as the API when tokens are configured (401 with the challenge
//! without or with a wrong token, the page with a right one), open to loopback
//! clients of a hub without tokens, and 405 for other methods. The page itself is
//! tested in headless Chromium by tests/console.

use crate::support::client;
use crate::support::hub::{Server, plugins, serve};
use http::Method;
use wasmhub::config::TokenConfig;

/// Asserts `resp` is the console page with its security headers.
async fn assert_console(resp: client::ClientResp) {
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(resp.header("cache-control"), Some("no-store"));
    assert_eq!(resp.header("x-content-type-options"), Some("nosniff"));
    let csp = resp.header("content-security-policy").expect("a CSP").to_string();
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert!(csp.contains("connect-src 'self'"), "{csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    let page = String::from_utf8_lossy(&resp.bytes().await).into_owned();
    assert!(page.starts_with("<!doctype html>"));
    assert!(page.contains("wasmhub console"));
    assert!(page.contains("/api/approvals"));
}

async fn get(s: &Server, token: Option<&str>) -> client::ClientResp {
    s.request(Method::GET, "/console", None, token).await
}

#[tokio::test]
async fn the_console_is_served_to_loopback_clients_of_a_hub_without_tokens() {
    let dir = plugins(&[], &[]);
    let s = serve(&dir, |_| {}).await;
    assert_console(get(&s, None).await).await;
    let post = s.request(Method::POST, "/console", None, None).await;
    assert_eq!(post.status, 405);
    assert_eq!(post.header("allow"), Some("GET"));
}

#[tokio::test]
async fn the_console_needs_a_token_like_the_api_when_tokens_are_configured() {
    let dir = plugins(&[], &[]);
    std::fs::write(dir.path("ops.secret"), "ops-secret-456").unwrap();
    let ops = TokenConfig {
        name: "ops".into(),
        secret_file: Some(dir.path("ops.secret")),
        allow: vec!["*".into()],
        operator: true,
        ..TokenConfig::default()
    };
    let s = serve(&dir, |c| c.tokens = vec![ops]).await;

    let missing = get(&s, None).await;
    assert_eq!(missing.status, 401);
    assert_eq!(
        missing.header("www-authenticate"),
        Some("Bearer realm=\"wasmhub\"")
    );
    let missing = String::from_utf8_lossy(&missing.bytes().await).into_owned();
    assert!(
        !missing.contains("<html"),
        "the page leaked to an anonymous client"
    );

    let wrong = get(&s, Some("wrong")).await;
    assert_eq!(wrong.status, 401);
    assert_eq!(
        wrong.header("www-authenticate"),
        Some("Bearer realm=\"wasmhub\", error=\"invalid_token\"")
    );
    // The API it reads answers the same way.
    assert_eq!(
        s.request(Method::GET, "/api/plugins", None, None).await.status,
        401
    );

    assert_console(get(&s, Some("ops-secret-456")).await).await;
}
