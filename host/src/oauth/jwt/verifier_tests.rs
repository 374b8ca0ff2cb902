//! [`JwtIssuers`] with a scripted key set: which tokens are its, the issuer
//! picked by `iss`, the resource as the default audience or a configured one, and
//! the claim mapping (a group claim, an unmapped subject).

use super::super::tests::{AUD, ISS, NOW, Signer, claims};
use super::*;
use crate::config::{IssuerConfig, OAuthConfig};
use crate::oauth::jwt::fetch::FetchError;
use bytes::Bytes;
use serde_json::json;
use std::collections::BTreeMap;

struct Serve(serde_json::Value);

#[async_trait::async_trait]
impl super::super::Fetch for Serve {
    async fn get(&self, _url: &str) -> Result<Bytes, FetchError> {
        Ok(Bytes::from(self.0.to_string()))
    }
}

fn issuers(signer: &Signer, tune: impl FnOnce(&mut IssuerConfig)) -> JwtIssuers {
    let mut entry = IssuerConfig {
        issuer: ISS.into(),
        jwks_uri: format!("{ISS}/keys"),
        audience: String::new(),
        principal_claim: "email".into(),
        principals: BTreeMap::from([("alice@example.com".into(), "alice".into())]),
        skew_secs: 60,
        refetch_secs: 60,
        jwks_cache_secs: 3600,
        max_kb: 64,
        timeout_ms: 1000,
        allow_private: false,
        allow_http: false,
        default_scopes: vec!["hub:tools".into(), "chat".into()],
    };
    tune(&mut entry);
    let config = OAuthConfig {
        public_url: "https://hub.example.com/".into(),
        issuers: vec![entry],
        ..OAuthConfig::default()
    };
    let keys = json!({"keys": [signer.jwk("k")]});
    JwtIssuers::with(&config, |_| Arc::new(Serve(keys.clone())), Arc::new(|| NOW))
}

#[tokio::test]
async fn only_jwts_are_its_and_the_principal_comes_from_the_claim() {
    let signer = Signer::ed();
    let v = issuers(&signer, |_| {});
    assert!(v.verify("wh_at_builtin", Resource::Mcp).await.is_none());
    let grant = v
        .verify(&signer.token("k", claims()), Resource::Mcp)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(grant.principal, "alice");
    assert_eq!(grant.client_id, ISS, "no client_id or azp: the issuer");
    // The default audience is the resource: this token is for /mcp only.
    assert_eq!(
        v.verify(&signer.token("k", claims()), Resource::Api).await,
        Some(Err(Rejection::WrongAudience))
    );
    let mut other = claims();
    other["email"] = json!("mallory@example.com");
    assert_eq!(
        v.verify(&signer.token("k", other), Resource::Mcp).await,
        Some(Err(Rejection::UnmappedSubject))
    );
    let mut elsewhere = claims();
    elsewhere["iss"] = json!("https://other.example.com");
    assert_eq!(
        v.verify(&signer.token("k", elsewhere), Resource::Mcp).await,
        Some(Err(Rejection::WrongIssuer))
    );
}

#[tokio::test]
async fn a_group_claim_and_a_configured_audience() {
    let signer = Signer::ec();
    let v = issuers(&signer, |c| {
        c.principal_claim = "groups".into();
        c.principals = BTreeMap::from([
            ("hub-ops".into(), "ops".into()),
            ("hub-users".into(), "alice".into()),
        ]);
        c.audience = "api://wasmhub".into();
    });
    let mut c = claims();
    c["aud"] = json!("api://wasmhub");
    c["groups"] = json!(["staff", "hub-users", "hub-ops"]);
    c["azp"] = json!("cli");
    for resource in [Resource::Mcp, Resource::Api] {
        let grant = v
            .verify(&signer.token("k", c.clone()), resource)
            .await
            .unwrap()
            .unwrap();
        // The first mapped value in the token's order wins.
        assert_eq!(
            (grant.principal.as_str(), grant.client_id.as_str()),
            ("alice", "cli")
        );
    }
    let mut resource_aud = claims();
    resource_aud["aud"] = json!(AUD);
    resource_aud["groups"] = json!(["hub-ops"]);
    assert_eq!(
        v.verify(&signer.token("k", resource_aud), Resource::Mcp).await,
        Some(Err(Rejection::WrongAudience))
    );
}

#[tokio::test]
async fn the_scopes_are_the_tokens_known_ones_or_the_issuers_default() {
    async fn scopes_of(v: &JwtIssuers, signer: &Signer, c: serde_json::Value) -> String {
        let token = signer.token("k", c);
        let grant = v.verify(&token, Resource::Mcp).await.unwrap().unwrap();
        grant.scopes.to_string()
    }
    let signer = Signer::ed();
    let v = issuers(&signer, |_| {});
    let mut c = claims();
    c["scope"] = json!("openid hub:tools email");
    assert_eq!(scopes_of(&v, &signer, c).await, "hub:tools");
    let mut c = claims();
    c["scp"] = json!(["chat", "operator", "User.Read"]);
    assert_eq!(scopes_of(&v, &signer, c).await, "chat operator");
    let mut c = claims();
    c["scp"] = json!("hub:tools chat");
    assert_eq!(scopes_of(&v, &signer, c).await, "hub:tools chat");
    // A scope claim naming none of the hub's scopes grants nothing.
    let mut c = claims();
    c["scope"] = json!("openid");
    assert_eq!(scopes_of(&v, &signer, c).await, "");
    // No claim: the issuer's default.
    assert_eq!(scopes_of(&v, &signer, claims()).await, "hub:tools chat");
    let v = issuers(&signer, |c| c.default_scopes = vec!["operator".into()]);
    assert_eq!(scopes_of(&v, &signer, claims()).await, "operator");
}
