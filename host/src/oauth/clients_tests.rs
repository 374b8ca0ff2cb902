//! Registration: metadata checks, the rate limit, the cap on unused clients, and
//! sign-in codes (single use, expiry).

use super::*;
use crate::oauth::test_support::TestServer;
use serde_json::json;

fn metadata(v: serde_json::Value) -> Metadata {
    serde_json::from_value(v).unwrap()
}

fn client(uri: &str) -> Metadata {
    metadata(json!({ "redirect_uris": [uri], "client_name": "Test client" }))
}

#[tokio::test]
async fn registration_checks_the_metadata() {
    let t = TestServer::new();
    let clients = &t.server.clients;
    let info = clients.register(client("http://127.0.0.1:1/cb")).await.unwrap();
    assert!(info.client_id.starts_with("client_"));
    assert_eq!(clients.get(&info.client_id).await.unwrap(), Some(info.clone()));
    for (bad, code) in [
        (json!({}), "invalid_client_metadata"),
        (
            json!({ "redirect_uris": ["http://evil.example/cb"] }),
            "invalid_redirect_uri",
        ),
        (
            json!({ "redirect_uris": ["https://a.example/cb"], "grant_types": ["client_credentials"] }),
            "invalid_client_metadata",
        ),
        (
            json!({ "redirect_uris": ["https://a.example/cb"], "client_name": "a\u{7}b" }),
            "invalid_client_metadata",
        ),
    ] {
        t.advance(60_000);
        let e = clients.register(metadata(bad.clone())).await.unwrap_err();
        assert_eq!(e.code(), code, "{bad}: {e}");
    }
}

#[tokio::test]
async fn registration_bounds_are_the_configured_ones_and_named() {
    let t = TestServer::tuned(|c| {
        c.registrations_per_minute = 100;
        c.max_redirect_uris = 2;
        c.max_redirect_uri_bytes = 30;
        c.max_client_name_chars = 4;
    });
    let clients = &t.server.clients;
    let two =
        json!({ "redirect_uris": ["https://a.example/1", "https://a.example/2"], "client_name": "Four" });
    clients.register(metadata(two)).await.unwrap();
    for (bad, says) in [
        (
            json!({ "redirect_uris": ["https://a.example/1", "https://a.example/2", "https://a.example/3"] }),
            "1 to 2 URIs (oauth.max_redirect_uris)",
        ),
        (
            json!({ "redirect_uris": ["https://a.example/a-rather-long-callback"] }),
            "longer than 30 bytes (oauth.max_redirect_uri_bytes)",
        ),
        (
            json!({ "redirect_uris": ["https://a.example/1"], "client_name": "Fives" }),
            "at most 4 characters (oauth.max_client_name_chars)",
        ),
    ] {
        let e = clients.register(metadata(bad.clone())).await.unwrap_err();
        assert_eq!(e.code(), "invalid_client_metadata", "{bad}");
        assert!(e.to_string().contains(says), "{bad}: {e}");
    }
}

#[tokio::test]
async fn registrations_are_rate_limited_per_minute() {
    let t = TestServer::new();
    let clients = &t.server.clients;
    for _ in 0..3 {
        clients.register(client("https://a.example/cb")).await.unwrap();
    }
    let e = clients
        .register(client("https://a.example/cb"))
        .await
        .unwrap_err();
    assert!(matches!(e, RegisterError::RateLimited { per_minute: 3 }));
    assert!(e.to_string().contains("oauth.registrations_per_minute"), "{e}");
    t.advance(60_000);
    clients.register(client("https://a.example/cb")).await.unwrap();
}

#[tokio::test]
async fn unused_registrations_are_capped_until_they_sign_in_or_expire() {
    let t = TestServer::new();
    let clients = &t.server.clients;
    let mut first = None;
    for i in 0..5 {
        if i % 3 == 0 {
            t.advance(60_000);
        }
        let info = clients.register(client("https://a.example/cb")).await.unwrap();
        first.get_or_insert(info);
    }
    t.advance(60_000);
    let e = clients
        .register(client("https://a.example/cb"))
        .await
        .unwrap_err();
    assert!(matches!(e, RegisterError::TooManyUnused { max: 5 }), "{e}");
    assert!(e.to_string().contains("oauth.max_unused_clients"), "{e}");
    // One signs in: room for one more.
    clients.mark_used(first.as_ref().unwrap()).await.unwrap();
    clients.register(client("https://a.example/cb")).await.unwrap();
    // A day later the unused ones are gone; the used one stays.
    t.advance(86_400_000);
    assert!(clients.get(&first.unwrap().client_id).await.unwrap().is_some());
    clients.register(client("https://a.example/cb")).await.unwrap();
}

#[tokio::test]
async fn signin_codes_are_single_use_and_expire() {
    let t = TestServer::new();
    let signin = &t.server.signin;
    let (code, secs) = signin.create("alice").await.unwrap();
    assert_eq!(secs, 600);
    assert_eq!(
        signin.redeem(&format!(" {code}\n")).await.unwrap(),
        Some("alice".into())
    );
    assert_eq!(signin.redeem(&code).await.unwrap(), None, "used");
    let (late, _) = signin.create("alice").await.unwrap();
    t.advance(600_000);
    assert_eq!(signin.redeem(&late).await.unwrap(), None, "expired");
    assert_eq!(signin.redeem("wh_si_unknown").await.unwrap(), None);
    assert_eq!(signin.redeem("s3cret").await.unwrap(), None);
}
