//! An issuer's signing keys, fetched and cached: from the configured `jwks_uri`,
//! or the one its metadata names (OpenID Connect discovery, then RFC 8414). A
//! token under a `kid` the cached set lacks makes the hub fetch the set again (the
//! issuer rotated its keys), at most once per `refetch_ms` whatever the outcome,
//! so a stream of tokens with made-up `kid`s cannot make the hub hammer the
//! issuer. A set older than `max_age_ms` is fetched again before use, so a key the
//! issuer withdrew stops verifying. One fetch at a time: concurrent requests that
//! need it wait for it rather than each fetching, and those the cache answers do
//! not wait at all.

use super::fetch::{Fetch, FetchError};
use super::{Alg, Jwks, JwksError, PublicKey};
use crate::oauth::Clock;
use bytes::Bytes;
use serde::Deserialize;
use std::fmt;
use std::sync::Arc;

/// Why an issuer's keys are not at hand.
#[derive(Debug)]
pub(crate) enum KeysError {
    /// A document could not be fetched.
    Fetch { url: String, source: FetchError },
    /// The metadata document is not JSON naming the issuer and a `jwks_uri`.
    Metadata { url: String, source: serde_json::Error },
    /// The metadata document names another issuer (RFC 8414 §3.3).
    OtherIssuer { url: String },
    /// The key set cannot be used.
    Jwks { url: String, source: JwksError },
    /// The last attempt failed and the next is not due yet.
    Backoff,
}

impl fmt::Display for KeysError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeysError::Fetch { url, source } => write!(f, "fetching {url}: {source}"),
            KeysError::Metadata { url, source } => {
                write!(
                    f,
                    "{url} is not authorization server metadata with a jwks_uri: {source}"
                )
            }
            KeysError::OtherIssuer { url } => write!(f, "{url} names another issuer"),
            KeysError::Jwks { url, source } => write!(f, "{url}: {source}"),
            KeysError::Backoff => {
                f.write_str("the issuer's keys could not be fetched lately; trying again later")
            }
        }
    }
}

impl std::error::Error for KeysError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            KeysError::Fetch { source, .. } => Some(source),
            KeysError::Metadata { source, .. } => Some(source),
            KeysError::Jwks { source, .. } => Some(source),
            KeysError::OtherIssuer { .. } | KeysError::Backoff => None,
        }
    }
}

/// How an issuer's keys are found and kept.
#[derive(Debug, Clone)]
pub(crate) struct KeyPolicy {
    /// The issuer identifier.
    pub(crate) issuer: String,
    /// The configured `jwks_uri`; `None` to discover it.
    pub(crate) jwks_uri: Option<String>,
    /// Fewest milliseconds between two fetches caused by a miss (or a failure).
    pub(crate) refetch_ms: u64,
    /// Most milliseconds a fetched set is used.
    pub(crate) max_age_ms: u64,
}

#[derive(Default)]
struct State {
    keys: Option<Jwks>,
    /// When the set was fetched.
    fetched_at: u64,
    /// When a fetch was last tried, successful or not.
    tried_at: Option<u64>,
    /// The discovered `jwks_uri`.
    discovered: Option<String>,
}

/// One issuer's keys.
pub(crate) struct IssuerKeys {
    policy: KeyPolicy,
    fetch: Arc<dyn Fetch>,
    clock: Clock,
    /// The cache, never held across an await: a look-up the cache answers does
    /// not wait for a fetch in progress.
    state: std::sync::Mutex<State>,
    /// Held for the length of a fetch, so there is one at a time.
    fetching: tokio::sync::Mutex<()>,
}

#[derive(Deserialize)]
struct Metadata {
    issuer: String,
    jwks_uri: String,
}

/// What a look-up found.
#[derive(Debug)]
pub(crate) enum Lookup {
    /// The key.
    Found(PublicKey),
    /// The set (fresh or refetched) has no such key.
    Unknown,
}

impl IssuerKeys {
    pub(crate) fn new(policy: KeyPolicy, fetch: Arc<dyn Fetch>, clock: Clock) -> IssuerKeys {
        IssuerKeys {
            policy,
            fetch,
            clock,
            state: std::sync::Mutex::new(State::default()),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    /// The key for a token signed with `alg` under `kid`.
    pub(crate) async fn key(&self, kid: Option<&str>, alg: Alg) -> Result<Lookup, KeysError> {
        if let Some(answer) = self.cached(kid, alg) {
            return answer;
        }
        // One fetch at a time; whoever waited for it looks again first.
        let _fetching = self.fetching.lock().await;
        if let Some(answer) = self.cached(kid, alg) {
            return answer;
        }
        let now = (self.clock)();
        let discovered = {
            let mut state = self.lock();
            state.tried_at = Some(now);
            state.discovered.clone()
        };
        let keys = self.fetch_keys(discovered).await?;
        let found = keys.find(kid, alg).cloned();
        let mut state = self.lock();
        state.keys = Some(keys);
        state.fetched_at = now;
        Ok(found.map_or(Lookup::Unknown, Lookup::Found))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The answer the cached set gives without fetching, `None` when a fetch is due.
    fn cached(&self, kid: Option<&str>, alg: Alg) -> Option<Result<Lookup, KeysError>> {
        let state = self.lock();
        let now = (self.clock)();
        let fresh = state.keys.is_some() && now.saturating_sub(state.fetched_at) < self.policy.max_age_ms;
        if fresh && let Some(key) = state.keys.as_ref().and_then(|k| k.find(kid, alg)) {
            return Some(Ok(Lookup::Found(key.clone())));
        }
        let due = state
            .tried_at
            .is_none_or(|at| now.saturating_sub(at) >= self.policy.refetch_ms);
        if due {
            return None;
        }
        // Not due: an old set still answers (better than nothing while the
        // issuer is unreachable), a missing one cannot.
        Some(match state.keys.as_ref() {
            Some(keys) => Ok(keys
                .find(kid, alg)
                .cloned()
                .map_or(Lookup::Unknown, Lookup::Found)),
            None => Err(KeysError::Backoff),
        })
    }

    async fn fetch_keys(&self, discovered: Option<String>) -> Result<Jwks, KeysError> {
        let url = match (&self.policy.jwks_uri, discovered) {
            (Some(url), _) => url.clone(),
            (None, Some(url)) => url,
            (None, None) => {
                let url = self.discover().await?;
                self.lock().discovered = Some(url.clone());
                url
            }
        };
        let body = self.get(&url).await?;
        let keys = Jwks::parse(&body).map_err(|source| KeysError::Jwks { url, source })?;
        crate::info!(
            "oauth: {} usable signing keys of issuer {}",
            keys.len(),
            self.policy.issuer
        );
        Ok(keys)
    }

    /// The `jwks_uri` of the issuer's metadata: OpenID Connect discovery, then
    /// RFC 8414's well-known URL (the path after the host's well-known prefix).
    async fn discover(&self) -> Result<String, KeysError> {
        let issuer = self.policy.issuer.trim_end_matches('/');
        let oidc = format!("{issuer}/.well-known/openid-configuration");
        let body = match self.get(&oidc).await {
            Ok(body) => (oidc, body),
            Err(first) => {
                let Some(rfc8414) = rfc8414_url(issuer) else {
                    return Err(first);
                };
                let body = self.get(&rfc8414).await?;
                (rfc8414, body)
            }
        };
        let (url, body) = body;
        let meta: Metadata = serde_json::from_slice(&body).map_err(|source| KeysError::Metadata {
            url: url.clone(),
            source,
        })?;
        if meta.issuer.trim_end_matches('/') != issuer {
            return Err(KeysError::OtherIssuer { url });
        }
        Ok(meta.jwks_uri)
    }

    async fn get(&self, url: &str) -> Result<Bytes, KeysError> {
        self.fetch.get(url).await.map_err(|source| KeysError::Fetch {
            url: url.to_string(),
            source,
        })
    }
}

/// `https://host/path` → `https://host/.well-known/oauth-authorization-server/path`.
fn rfc8414_url(issuer: &str) -> Option<String> {
    let scheme_end = issuer.find("://")? + 3;
    let (origin, path) = match issuer[scheme_end..].find('/') {
        Some(i) => issuer.split_at(scheme_end + i),
        None => (issuer, ""),
    };
    Some(format!("{origin}/.well-known/oauth-authorization-server{path}"))
}

#[cfg(test)]
#[path = "keys_tests.rs"]
mod tests;
