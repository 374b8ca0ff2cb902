//! Codes (single use, expiry, PKCE, client and redirect binding), rotation with
//! family revocation on reuse, revocation, and what the verifier says why.

use super::*;
use crate::oauth::test_support::TestServer;

const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
const REDIRECT: &str = "http://127.0.0.1:9000/cb";
const MCP: &str = "https://hub.example/mcp";

fn redeem<'a>(
    code: &'a str,
    client_id: &'a str,
    redirect_uri: Option<&'a str>,
    verifier: &'a str,
    resource: Option<&'a str>,
) -> Redemption<'a> {
    Redemption {
        code,
        client_id,
        redirect_uri,
        verifier,
        resource,
    }
}

fn issued(scopes: &str) -> Issued {
    Issued {
        principal: "alice".into(),
        client_id: "client_1".into(),
        scopes: scopes.into(),
        resource: MCP.into(),
        family: Issuer::new_family(),
    }
}

async fn code(t: &TestServer, scopes: &str) -> String {
    let req = CodeRequest {
        issued: issued(scopes),
        redirect_uri: REDIRECT.into(),
        redirect_named: true,
        challenge: CHALLENGE.into(),
    };
    t.server.issuer.issue_code(req).await.unwrap()
}

/// A code whose authorization request left the redirect URI out.
async fn code_without_redirect(t: &TestServer) -> String {
    let req = CodeRequest {
        issued: issued("hub:tools"),
        redirect_uri: REDIRECT.into(),
        redirect_named: false,
        challenge: CHALLENGE.into(),
    };
    t.server.issuer.issue_code(req).await.unwrap()
}

async fn pair(t: &TestServer) -> TokenPair {
    let c = code(t, "hub:tools chat").await;
    t.server
        .issuer
        .redeem_code(redeem(&c, "client_1", Some(REDIRECT), VERIFIER, Some(MCP)))
        .await
        .unwrap()
}

async fn verify(t: &TestServer, token: &str, resource: Resource) -> Result<Grant, Rejection> {
    t.server
        .issuer
        .verify(token, resource)
        .await
        .expect("an access token")
}

fn is_invalid_grant(e: RedeemError, needle: &str) {
    assert_eq!(e.code(), "invalid_grant", "{e}");
    assert!(e.to_string().contains(needle), "{e}");
}

#[tokio::test]
async fn a_code_is_redeemed_once_and_its_replay_revokes_what_it_granted() {
    let t = TestServer::new();
    let c = code(&t, "hub:tools").await;
    let issuer = &t.server.issuer;
    let tokens = issuer
        .redeem_code(redeem(&c, "client_1", Some(REDIRECT), VERIFIER, None))
        .await
        .unwrap();
    assert_eq!(tokens.scope, "hub:tools");
    assert_eq!(tokens.expires_in, 900);
    let grant = verify(&t, &tokens.access_token, Resource::Mcp).await.unwrap();
    assert_eq!(
        (grant.principal.as_str(), grant.client_id.as_str()),
        ("alice", "client_1")
    );
    let replay = issuer
        .redeem_code(redeem(&c, "client_1", Some(REDIRECT), VERIFIER, None))
        .await;
    is_invalid_grant(replay.unwrap_err(), "already used");
    assert_eq!(
        verify(&t, &tokens.access_token, Resource::Mcp).await,
        Err(Rejection::Revoked)
    );
}

#[tokio::test]
async fn a_code_expires_after_a_minute() {
    let t = TestServer::new();
    let c = code(&t, "hub:tools").await;
    t.advance(60_000);
    let late = t
        .server
        .issuer
        .redeem_code(redeem(&c, "client_1", Some(REDIRECT), VERIFIER, None))
        .await;
    is_invalid_grant(late.unwrap_err(), "expired");
    let unknown = t
        .server
        .issuer
        .redeem_code(redeem("wh_ac_nope", "client_1", Some(REDIRECT), VERIFIER, None))
        .await;
    is_invalid_grant(unknown.unwrap_err(), "unknown");
}

#[tokio::test]
async fn a_code_is_bound_to_its_client_redirect_verifier_and_resource() {
    let t = TestServer::new();
    let issuer = &t.server.issuer;
    let c = code(&t, "hub:tools").await;
    let e = issuer
        .redeem_code(redeem(&c, "client_2", Some(REDIRECT), VERIFIER, None))
        .await;
    is_invalid_grant(e.unwrap_err(), "another client");
    let c = code(&t, "hub:tools").await;
    let e = issuer
        .redeem_code(redeem(
            &c,
            "client_1",
            Some("http://127.0.0.1:9001/cb"),
            VERIFIER,
            None,
        ))
        .await;
    is_invalid_grant(e.unwrap_err(), "redirect_uri");
    let c = code(&t, "hub:tools").await;
    let wrong = "eBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    let e = issuer
        .redeem_code(redeem(&c, "client_1", Some(REDIRECT), wrong, None))
        .await
        .unwrap_err();
    assert!(matches!(e, RedeemError::Pkce(pkce::PkceError::Mismatch)), "{e}");
    let c = code(&t, "hub:tools").await;
    let e = issuer
        .redeem_code(redeem(
            &c,
            "client_1",
            Some(REDIRECT),
            VERIFIER,
            Some("https://other.example/mcp"),
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "invalid_target");
}

#[tokio::test]
async fn refresh_tokens_rotate_and_a_replay_revokes_the_family() {
    let t = TestServer::new();
    let issuer = &t.server.issuer;
    let first = pair(&t).await;
    let second = issuer
        .refresh(&first.refresh_token, "client_1", None, None)
        .await
        .unwrap();
    assert_ne!(second.refresh_token, first.refresh_token);
    assert!(verify(&t, &second.access_token, Resource::Mcp).await.is_ok());
    // Narrowing is allowed; widening is not.
    let narrow = issuer
        .refresh(
            &second.refresh_token,
            "client_1",
            Some(Scopes::parse("chat").unwrap()),
            None,
        )
        .await
        .unwrap();
    assert_eq!(narrow.scope, "chat");
    let wide = issuer
        .refresh(
            &narrow.refresh_token,
            "client_1",
            Some(Scopes::parse("chat operator").unwrap()),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(wide.code(), "invalid_scope");
    // The first refresh token again: a thief or a confused client. Everything goes.
    let replay = issuer.refresh(&first.refresh_token, "client_1", None, None).await;
    is_invalid_grant(replay.unwrap_err(), "already used");
    for access in [&first.access_token, &second.access_token, &narrow.access_token] {
        assert_eq!(verify(&t, access, Resource::Mcp).await, Err(Rejection::Revoked));
    }
    // The newest refresh token was never used (the widening attempt spent it), so
    // only the family revocation stops the one before it.
    let after = issuer
        .refresh(&narrow.refresh_token, "client_1", None, None)
        .await;
    assert!(after.is_err());
}

#[tokio::test]
async fn a_refresh_token_is_bound_to_its_client_and_expires() {
    let t = TestServer::new();
    let p = pair(&t).await;
    let e = t
        .server
        .issuer
        .refresh(&p.refresh_token, "client_2", None, None)
        .await;
    is_invalid_grant(e.unwrap_err(), "another client");
    let p = pair(&t).await;
    t.advance(30 * 86_400_000);
    let e = t
        .server
        .issuer
        .refresh(&p.refresh_token, "client_1", None, None)
        .await;
    is_invalid_grant(e.unwrap_err(), "expired");
}

#[tokio::test]
async fn the_verifier_says_why_it_refuses() {
    let t = TestServer::new();
    let p = pair(&t).await;
    assert!(t.server.issuer.verify("not-ours", Resource::Mcp).await.is_none());
    assert_eq!(
        verify(&t, "wh_at_unknown", Resource::Mcp).await,
        Err(Rejection::Unknown)
    );
    // Bound to /mcp: the API root is another audience.
    assert_eq!(
        verify(&t, &p.access_token, Resource::Api).await,
        Err(Rejection::WrongAudience)
    );
    t.advance(900_000);
    assert_eq!(
        verify(&t, &p.access_token, Resource::Mcp).await,
        Err(Rejection::Expired)
    );
}

#[tokio::test]
async fn revoking_either_token_revokes_the_grant() {
    let t = TestServer::new();
    let p = pair(&t).await;
    t.server.issuer.revoke(&p.refresh_token).await.unwrap();
    assert_eq!(
        verify(&t, &p.access_token, Resource::Mcp).await,
        Err(Rejection::Revoked)
    );
    let e = t
        .server
        .issuer
        .refresh(&p.refresh_token, "client_1", None, None)
        .await;
    is_invalid_grant(e.unwrap_err(), "revoked");
    let q = pair(&t).await;
    t.server.issuer.revoke(&q.access_token).await.unwrap();
    assert_eq!(
        verify(&t, &q.access_token, Resource::Mcp).await,
        Err(Rejection::Revoked)
    );
    // Unknown tokens are fine to revoke.
    t.server.issuer.revoke("wh_rt_whatever").await.unwrap();
}

#[tokio::test]
async fn the_redirect_uri_is_repeated_when_the_authorization_request_named_it() {
    let t = TestServer::new();
    let issuer = &t.server.issuer;
    let c = code(&t, "hub:tools").await;
    let e = issuer
        .redeem_code(redeem(&c, "client_1", None, VERIFIER, None))
        .await;
    is_invalid_grant(e.unwrap_err(), "redirect_uri is required");
    // Left out of the authorization request (one registered): optional here.
    let c = code_without_redirect(&t).await;
    assert!(
        issuer
            .redeem_code(redeem(&c, "client_1", None, VERIFIER, None))
            .await
            .is_ok()
    );
    let c = code_without_redirect(&t).await;
    assert!(
        issuer
            .redeem_code(redeem(&c, "client_1", Some(REDIRECT), VERIFIER, None))
            .await
            .is_ok()
    );
}
