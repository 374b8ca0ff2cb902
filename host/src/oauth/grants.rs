//! What the authorization server issues and redeems: authorization codes (single
//! use, a minute at most, PKCE-bound), access tokens bound to one resource (RFC
//! 8707), and refresh tokens that rotate on every use, where presenting a spent
//! one revokes its whole family (OAuth 2.1 §4.3.1: a replay means the token
//! leaked). The same records answer the resource server: [`Issuer::verify`] is
//! the built-in server's [`TokenVerifier`].

use super::pkce;
use super::secret::{self, Kind as SecretKind};
use super::store::{GrantStore, Kind, Record, Spend};
use super::{Clock, Settings};
use crate::hub::{Grant, Rejection, Resource, Scopes, TokenVerifier};
use crate::storage::StorageError;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Who a token or code was issued to, for what (stored as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Issued {
    /// The principal the person signed in as.
    pub principal: String,
    /// The client it was issued to.
    pub client_id: String,
    /// The scopes granted, space-separated.
    pub scopes: String,
    /// The resource URL it is bound to.
    pub resource: String,
    /// The family: every token descending from one authorization code.
    pub family: String,
}

/// An authorization code's record: the grant plus what redeeming it must repeat.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CodeGrant {
    #[serde(flatten)]
    issued: Issued,
    redirect_uri: String,
    /// Whether the authorization request named `redirect_uri` (it may leave it out
    /// when the client registered one); then the token request must repeat it.
    #[serde(default = "named")]
    redirect_named: bool,
    challenge: String,
}

fn named() -> bool {
    true
}

/// A code to issue after a person consented.
pub(crate) struct CodeRequest {
    /// The grant.
    pub issued: Issued,
    /// The redirect URI the person is sent back to.
    pub redirect_uri: String,
    /// Whether the authorization request named it (redeeming must repeat it then).
    pub redirect_named: bool,
    /// The PKCE S256 challenge.
    pub challenge: String,
}

/// A token request of the `authorization_code` grant.
pub(crate) struct Redemption<'a> {
    pub code: &'a str,
    pub client_id: &'a str,
    /// Required when the authorization request named one (RFC 6749 §4.1.3).
    pub redirect_uri: Option<&'a str>,
    pub verifier: &'a str,
    /// The resource asked for (RFC 8707), if any.
    pub resource: Option<&'a str>,
}

/// The token endpoint's success answer (RFC 6749 §5.1).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TokenPair {
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: u64,
    pub refresh_token: String,
    pub scope: String,
}

/// Why the token endpoint refuses a grant (RFC 6749 §5.2).
#[derive(Debug)]
pub(crate) enum RedeemError {
    /// `invalid_grant`: the code or refresh token is unknown, expired, spent,
    /// revoked, or was issued to another client or redirect URI.
    InvalidGrant(&'static str),
    /// `invalid_grant` for a PKCE verifier that does not prove the challenge.
    Pkce(pkce::PkceError),
    /// `invalid_scope`: more scopes than were granted.
    InvalidScope(String),
    /// `invalid_target`: a resource the grant is not for.
    InvalidTarget,
    /// The store failed (`server_error`).
    Storage(StorageError),
}

impl RedeemError {
    /// The OAuth error code.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            RedeemError::InvalidGrant(_) | RedeemError::Pkce(_) => "invalid_grant",
            RedeemError::InvalidScope(_) => "invalid_scope",
            RedeemError::InvalidTarget => "invalid_target",
            RedeemError::Storage(_) => "server_error",
        }
    }
}

impl std::fmt::Display for RedeemError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RedeemError::InvalidGrant(why) => f.write_str(why),
            RedeemError::Pkce(e) => e.fmt(f),
            RedeemError::InvalidScope(why) => f.write_str(why),
            RedeemError::InvalidTarget => f.write_str("the resource is not the one this grant is for"),
            RedeemError::Storage(_) => f.write_str("the authorization server's storage failed"),
        }
    }
}

impl std::error::Error for RedeemError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RedeemError::Pkce(e) => Some(e),
            RedeemError::Storage(e) => Some(e),
            _ => None,
        }
    }
}

impl From<StorageError> for RedeemError {
    fn from(e: StorageError) -> Self {
        RedeemError::Storage(e)
    }
}

/// Issues, redeems, rotates, revokes and verifies.
pub(crate) struct Issuer {
    store: Arc<dyn GrantStore>,
    settings: Arc<Settings>,
    clock: Clock,
}

fn record<T: Serialize>(value: &T, expires_ms: u64) -> Record {
    Record {
        value: serde_json::to_value(value).expect("grant records serialize"),
        expires_ms,
        spent: false,
    }
}

fn decode<T: for<'de> Deserialize<'de>>(r: &Record) -> Result<T, StorageError> {
    serde_json::from_value(r.value.clone()).map_err(|source| StorageError::Corrupt {
        table: "oauth".into(),
        source,
    })
}

impl Issuer {
    pub(crate) fn new(store: Arc<dyn GrantStore>, settings: Arc<Settings>, clock: Clock) -> Issuer {
        Issuer {
            store,
            settings,
            clock,
        }
    }

    fn now(&self) -> u64 {
        (self.clock)()
    }

    /// A new family id for a new authorization.
    pub(crate) fn new_family() -> String {
        secret::id("fam")
    }

    /// Stores a code for `req` and answers it (the only time it exists in clear).
    pub(crate) async fn issue_code(&self, req: CodeRequest) -> Result<String, StorageError> {
        let code = secret::new(SecretKind::Code);
        let grant = CodeGrant {
            issued: req.issued,
            redirect_uri: req.redirect_uri,
            redirect_named: req.redirect_named,
            challenge: req.challenge,
        };
        let expires = self.now() + self.settings.code_ms;
        self.store
            .put(Kind::Code, &secret::digest(&code), &record(&grant, expires))
            .await?;
        Ok(code)
    }

    /// Redeems `code` for a token pair: once, before it expires, by the client it
    /// was issued to, with the same redirect URI and a verifier proving the PKCE
    /// challenge. A second redemption revokes what the first one got.
    pub(crate) async fn redeem_code(&self, r: Redemption<'_>) -> Result<TokenPair, RedeemError> {
        let grant: CodeGrant = match self.store.spend(Kind::Code, &secret::digest(r.code)).await? {
            Spend::Missing => return Err(RedeemError::InvalidGrant("unknown authorization code")),
            Spend::Replayed(r) => {
                let grant: CodeGrant = decode(&r)?;
                self.revoke_family(&grant.issued.family).await?;
                return Err(RedeemError::InvalidGrant(
                    "the authorization code was already used: the tokens it granted are revoked",
                ));
            }
            Spend::Fresh(r) if r.expires_ms <= self.now() => {
                return Err(RedeemError::InvalidGrant("the authorization code expired"));
            }
            Spend::Fresh(r) => decode(&r)?,
        };
        if grant.issued.client_id != r.client_id {
            return Err(RedeemError::InvalidGrant(
                "the authorization code was issued to another client",
            ));
        }
        match r.redirect_uri {
            Some(uri) if uri != grant.redirect_uri => {
                return Err(RedeemError::InvalidGrant(
                    "redirect_uri differs from the authorization request's",
                ));
            }
            None if grant.redirect_named => {
                return Err(RedeemError::InvalidGrant(
                    "redirect_uri is required: the authorization request named one",
                ));
            }
            Some(_) | None => {}
        }
        pkce::verify(r.verifier, &grant.challenge).map_err(RedeemError::Pkce)?;
        if r.resource.is_some_and(|res| res != grant.issued.resource) {
            return Err(RedeemError::InvalidTarget);
        }
        Ok(self.issue_pair(&grant.issued).await?)
    }

    /// Rotates `refresh_token`: a new pair of the same family, narrowed to
    /// `scope` when given. A spent token revokes the family.
    pub(crate) async fn refresh(
        &self,
        refresh_token: &str,
        client_id: &str,
        scope: Option<Scopes>,
        resource: Option<&str>,
    ) -> Result<TokenPair, RedeemError> {
        let mut issued: Issued = match self
            .store
            .spend(Kind::Refresh, &secret::digest(refresh_token))
            .await?
        {
            Spend::Missing => return Err(RedeemError::InvalidGrant("unknown refresh token")),
            Spend::Replayed(r) => {
                let issued: Issued = decode(&r)?;
                self.revoke_family(&issued.family).await?;
                crate::warn!(
                    "oauth: a spent refresh token of principal {} (client {}) was presented again; its family is revoked",
                    issued.principal,
                    issued.client_id
                );
                return Err(RedeemError::InvalidGrant(
                    "the refresh token was already used: every token of its grant is revoked",
                ));
            }
            Spend::Fresh(r) if r.expires_ms <= self.now() => {
                return Err(RedeemError::InvalidGrant("the refresh token expired"));
            }
            Spend::Fresh(r) => decode(&r)?,
        };
        if issued.client_id != client_id {
            return Err(RedeemError::InvalidGrant(
                "the refresh token was issued to another client",
            ));
        }
        if self.family_revoked(&issued.family).await? {
            return Err(RedeemError::InvalidGrant("the refresh token was revoked"));
        }
        if resource.is_some_and(|r| r != issued.resource) {
            return Err(RedeemError::InvalidTarget);
        }
        if let Some(asked) = scope {
            let granted = Scopes::parse(&issued.scopes).unwrap_or_default();
            if asked.and(granted) != asked {
                return Err(RedeemError::InvalidScope(format!(
                    "a refresh may only narrow the scopes granted ({granted})"
                )));
            }
            issued.scopes = asked.to_string();
        }
        Ok(self.issue_pair(&issued).await?)
    }

    async fn issue_pair(&self, issued: &Issued) -> Result<TokenPair, StorageError> {
        let now = self.now();
        let access = secret::new(SecretKind::Access);
        let refresh = secret::new(SecretKind::Refresh);
        self.store
            .put(
                Kind::Refresh,
                &secret::digest(&refresh),
                &record(issued, now + self.settings.refresh_ms),
            )
            .await?;
        self.store
            .put(
                Kind::Access,
                &secret::digest(&access),
                &record(issued, now + self.settings.access_ms),
            )
            .await?;
        Ok(TokenPair {
            access_token: access,
            token_type: "Bearer",
            expires_in: self.settings.access_ms / 1000,
            refresh_token: refresh,
            scope: issued.scopes.clone(),
        })
    }

    /// Revokes `token` (an access or refresh token) and every token of its family
    /// (RFC 7009 §2.1 allows it, and a client revoking one wants the grant gone).
    /// Unknown tokens are fine (RFC 7009 §2.2).
    pub(crate) async fn revoke(&self, token: &str) -> Result<(), StorageError> {
        let digest = secret::digest(token);
        for kind in [Kind::Access, Kind::Refresh] {
            if let Some(r) = self.store.get(kind, &digest).await? {
                let issued: Issued = decode(&r)?;
                return self.revoke_family(&issued.family).await;
            }
        }
        Ok(())
    }

    async fn revoke_family(&self, family: &str) -> Result<(), StorageError> {
        // Kept as long as any token of the family can live.
        let expires = self.now() + self.settings.refresh_ms.max(self.settings.access_ms);
        let mark = record(&serde_json::json!({}), expires);
        self.store.put(Kind::RevokedFamily, family, &mark).await
    }

    async fn family_revoked(&self, family: &str) -> Result<bool, StorageError> {
        Ok(self.store.get(Kind::RevokedFamily, family).await?.is_some())
    }

    /// The grant `token` carries for `resource`, or why it is refused.
    async fn check(&self, token: &str, resource: Resource) -> Result<Result<Grant, Rejection>, StorageError> {
        let Some(r) = self.store.get(Kind::Access, &secret::digest(token)).await? else {
            return Ok(Err(Rejection::Unknown));
        };
        if r.expires_ms <= self.now() {
            return Ok(Err(Rejection::Expired));
        }
        let issued: Issued = decode(&r)?;
        if self.family_revoked(&issued.family).await? {
            return Ok(Err(Rejection::Revoked));
        }
        // A token for the API root is good on every route; one for /mcp only there.
        let api_root = self.settings.resource(Resource::Api);
        if issued.resource != api_root && issued.resource != self.settings.resource(resource) {
            return Ok(Err(Rejection::WrongAudience));
        }
        Ok(Ok(Grant {
            principal: issued.principal,
            client_id: issued.client_id,
            scopes: Scopes::parse(&issued.scopes).unwrap_or_default(),
        }))
    }
}

#[async_trait::async_trait]
impl TokenVerifier for Issuer {
    async fn verify(&self, token: &str, resource: Resource) -> Option<Result<Grant, Rejection>> {
        if !SecretKind::Access.marks(token) {
            return None;
        }
        Some(match self.check(token, resource).await {
            Ok(verdict) => verdict,
            Err(e) => {
                // A token that cannot be checked is not accepted.
                crate::warn!("oauth: cannot check an access token: {e}");
                Err(Rejection::Unknown)
            }
        })
    }
}

#[cfg(test)]
#[path = "grants_tests.rs"]
mod tests;
