//! OAuth 2.1 through the built-in authorization server, over HTTP on loopback:
//! discovery documents and the exact challenges (401 and 403), registration, the
//! consent page and its form, the code exchange, a call through `/mcp` with the
//! grant's token recorded under its principal and client, refresh rotation whose
//! replay revokes the family, a registration flood (429), requests that must never
//! redirect, and the hub unchanged with `[oauth]` off.

use crate::support::oauth::*;
use http::Method;
use serde_json::json;
use wasmhub::config::OAuthConfig;

#[tokio::test]
async fn discovery_consent_and_a_call_through_mcp_recorded_with_principal_and_client() {
    let (hub, _dir, _plugins) = hub(|_| {}).await;
    let addr = hub.addr;
    let prm = get(addr, "/.well-known/oauth-protected-resource/mcp")
        .await
        .json()
        .await;
    assert_eq!(prm["resource"], "https://hub.example/mcp");
    assert_eq!(prm["authorization_servers"], json!([BASE]));
    assert_eq!(prm["scopes_supported"], json!(["hub:tools", "chat", "operator"]));
    assert_eq!(prm["bearer_methods_supported"], json!(["header"]));
    let root = get(addr, "/.well-known/oauth-protected-resource")
        .await
        .json()
        .await;
    assert_eq!(root["resource"], BASE);
    let meta = get(addr, "/.well-known/oauth-authorization-server")
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
    let api = get(addr, "/v1/models").await;
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
    let page = authorize_page(addr, &client, REDIRECT, "hub:tools").await;
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
        let page = authorize_page(addr, client, redirect, "hub:tools").await;
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
    let back = get(addr, &format!("/oauth/authorize?{}", form(&no_pkce))).await;
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
        assert_eq!(get(addr, path).await.status, 404, "{path}");
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
