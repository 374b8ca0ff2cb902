//! The refusals' statuses and exact challenges, with OAuth off and on.

use super::*;
use crate::hub::Rejection;

fn refusal(error: AuthError, oauth: bool, needs: Scope) -> Refusal {
    Refusal {
        error,
        metadata: oauth.then(|| "https://hub.example/.well-known/oauth-protected-resource/mcp".into()),
        needs,
    }
}

fn challenge(resp: &Resp) -> &str {
    resp.headers()[header::WWW_AUTHENTICATE].to_str().unwrap()
}

#[test]
fn reads_bearer_tokens() {
    let with = |value: &str| {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, value.parse().unwrap());
        h
    };
    assert_eq!(bearer_token(&with("Bearer abc")), Some("abc"));
    assert_eq!(bearer_token(&with(" bearer  abc ")), Some("abc"));
    assert_eq!(bearer_token(&with("Basic abc")), None);
    assert_eq!(bearer_token(&with("Bearer")), None);
    assert_eq!(bearer_token(&HeaderMap::new()), None);
}

#[test]
fn without_oauth_refusals_carry_the_plain_challenge() {
    let resp = refusal(AuthError::MissingToken, false, Scope::HubTools).into_response();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(challenge(&resp), "Bearer realm=\"wasmhub\"");
    let resp = refusal(AuthError::InvalidToken, false, Scope::HubTools).into_response();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        challenge(&resp),
        "Bearer realm=\"wasmhub\", error=\"invalid_token\""
    );
    let peer = "10.0.0.1:1".parse().unwrap();
    let resp = refusal(AuthError::NotLoopback { peer }, false, Scope::HubTools).into_response();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    assert!(resp.headers().get(header::WWW_AUTHENTICATE).is_none());
}

#[test]
fn with_oauth_refusals_point_to_the_metadata_and_name_the_scope() {
    let meta = "resource_metadata=\"https://hub.example/.well-known/oauth-protected-resource/mcp\"";
    let resp = refusal(AuthError::MissingToken, true, Scope::HubTools).into_response();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(challenge(&resp), format!("Bearer {meta}, scope=\"hub:tools\""));
    let resp = refusal(AuthError::Rejected(Rejection::Expired), true, Scope::HubTools).into_response();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        challenge(&resp),
        format!(
            "Bearer error=\"invalid_token\", error_description=\"the access token expired\", {meta}, scope=\"hub:tools\""
        )
    );
    let resp = refusal(
        AuthError::InsufficientScope { needed: Scope::Chat },
        true,
        Scope::Chat,
    )
    .into_response();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        challenge(&resp),
        format!("Bearer error=\"insufficient_scope\", {meta}, scope=\"chat\"")
    );
}
