//! [`JwtIssuers`]: the [`TokenVerifier`] for `[[oauth.issuers]]`. A bearer token
//! shaped like a JWT is this verifier's; its `iss` picks the configured issuer,
//! whose keys (fetched and cached) verify it, its claims are checked for the
//! resource, and the configured claim maps it to a `[[tokens]]` name whose policy
//! then applies, narrowed to the token's scopes (its `scope` or `scp` claim, else
//! the issuer's `default_scopes`). Key fetch failures are logged here and refuse
//! the token.

use super::{Compact, Expect, HttpFetch, IssuerKeys, JwtError, KeyPolicy, Lookup, looks_like_jwt};
use crate::config::{IssuerConfig, OAuthConfig};
use crate::hub::{Grant, Rejection, Resource, Scopes, TokenVerifier};
use crate::oauth::Clock;
use std::sync::Arc;
use std::time::Duration;

/// One trusted issuer.
struct External {
    config: IssuerConfig,
    keys: IssuerKeys,
}

/// The external issuers whose tokens the hub accepts.
pub(crate) struct JwtIssuers {
    /// `oauth.public_url` without a trailing slash.
    base: String,
    issuers: Vec<External>,
    clock: Clock,
}

impl JwtIssuers {
    /// The issuers of `config`, fetching over the network; `None` when there are none.
    pub(crate) fn from_config(config: &OAuthConfig) -> Option<JwtIssuers> {
        (!config.issuers.is_empty()).then(|| {
            JwtIssuers::with(
                config,
                |c| {
                    Arc::new(HttpFetch {
                        http: c.allow_http,
                        private: c.allow_private,
                        max_bytes: (c.max_kb as usize).saturating_mul(1024),
                        timeout: Duration::from_millis(c.timeout_ms),
                    })
                },
                Arc::new(crate::clock::now_ms),
            )
        })
    }

    /// The issuers of `config` with the fetcher `fetch` makes for each and `clock`.
    pub(crate) fn with(
        config: &OAuthConfig,
        fetch: impl Fn(&IssuerConfig) -> Arc<dyn super::Fetch>,
        clock: Clock,
    ) -> JwtIssuers {
        let issuers = config
            .issuers
            .iter()
            .map(|c| External {
                keys: IssuerKeys::new(
                    KeyPolicy {
                        issuer: c.issuer.clone(),
                        jwks_uri: (!c.jwks_uri.is_empty()).then(|| c.jwks_uri.clone()),
                        refetch_ms: c.refetch_secs.saturating_mul(1000),
                        max_age_ms: c.jwks_cache_secs.saturating_mul(1000),
                    },
                    fetch(c),
                    clock.clone(),
                ),
                config: c.clone(),
            })
            .collect();
        JwtIssuers {
            base: config.base().to_string(),
            issuers,
            clock,
        }
    }

    /// The issuer identifiers (the protected resource metadata lists them).
    pub(crate) fn identifiers(&self) -> Vec<String> {
        self.issuers.iter().map(|i| i.config.issuer.clone()).collect()
    }

    async fn check(&self, token: &str, resource: Resource) -> Result<Grant, Rejection> {
        let refuse = |e: JwtError| e.rejection();
        let compact = Compact::parse(token).map_err(refuse)?;
        let iss = compact.claims.string("iss");
        let issuer = self
            .issuers
            .iter()
            .find(|i| Some(i.config.issuer.as_str()) == iss)
            .ok_or(Rejection::WrongIssuer)?;
        let key = match issuer.keys.key(compact.kid.as_deref(), compact.alg).await {
            Ok(Lookup::Found(key)) => key,
            Ok(Lookup::Unknown) => return Err(Rejection::UnknownKey),
            Err(e) => {
                crate::warn!(
                    "oauth: the keys of issuer {} are not at hand: {e}",
                    issuer.config.issuer
                );
                return Err(Rejection::UnknownKey);
            }
        };
        compact.verify(&key).map_err(refuse)?;
        let audience = match issuer.config.audience.as_str() {
            "" => format!("{}{}", self.base, resource.suffix()),
            configured => configured.to_string(),
        };
        let expect = Expect {
            issuer: &issuer.config.issuer,
            audience: &audience,
            skew_ms: issuer.config.skew_secs.saturating_mul(1000),
        };
        compact.claims.check(&expect, (self.clock)()).map_err(refuse)?;
        // The first of the claim's values (in the token's order) that is mapped.
        let principal = compact
            .claims
            .strings(&issuer.config.principal_claim)
            .into_iter()
            .find_map(|v| issuer.config.principals.get(v))
            .ok_or(Rejection::UnmappedSubject)?;
        let client_id = compact
            .claims
            .string("client_id")
            .or_else(|| compact.claims.string("azp"))
            .unwrap_or(&issuer.config.issuer);
        // The token's scopes the hub knows, or the issuer's default for a token
        // without a scope claim; the principal's policy narrows them further.
        let scopes = match compact.claims.scopes() {
            Some(names) => Scopes::known(names),
            None => Scopes::known(issuer.config.default_scopes.iter().map(String::as_str)),
        };
        Ok(Grant {
            principal: principal.clone(),
            client_id: client_id.to_string(),
            scopes,
        })
    }
}

#[async_trait::async_trait]
impl TokenVerifier for JwtIssuers {
    async fn verify(&self, token: &str, resource: Resource) -> Option<Result<Grant, Rejection>> {
        // Built-in tokens are not JWTs: leave them to their verifier.
        if !looks_like_jwt(token) {
            return None;
        }
        Some(self.check(token, resource).await)
    }
}

#[cfg(test)]
#[path = "verifier_tests.rs"]
mod tests;
