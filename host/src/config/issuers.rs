//! `[[oauth.issuers]]`: external identity providers whose JWT access tokens the
//! hub accepts. Each maps a claim of its tokens (`sub`, `email`, a group claim)
//! to a `[[tokens]]` entry's name, whose policy then applies as it is (the
//! token's operator flag included); the checks are `crate::oauth::jwt`'s.

use super::oauth::SCOPE_NAMES;
use serde::Deserialize;
use std::collections::BTreeMap;

/// One `[[oauth.issuers]]` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IssuerConfig {
    /// The issuer identifier, exactly as its tokens' `iss` says
    /// (`https://id.example.com/realms/main`).
    pub issuer: String,
    /// Where its key set is; empty: discovered from the issuer's metadata.
    #[serde(default)]
    pub jwks_uri: String,
    /// The `aud` its tokens carry for this hub; empty: the resource's URL
    /// (`{public_url}/mcp`, or `public_url`), so a token is bound to one resource.
    #[serde(default)]
    pub audience: String,
    /// The claim naming who the token is for; a string or an array of strings
    /// (a group claim).
    #[serde(default = "default_claim")]
    pub principal_claim: String,
    /// Values of `principal_claim` → `[[tokens]]` names.
    #[serde(default)]
    pub principals: BTreeMap<String, String>,
    /// How far `exp`/`nbf` may be off, in seconds.
    #[serde(default = "default_skew")]
    pub skew_secs: u64,
    /// Fewest seconds between two key set fetches caused by an unknown key.
    #[serde(default = "default_refetch")]
    pub refetch_secs: u64,
    /// Most seconds a fetched key set is used.
    #[serde(default = "default_cache")]
    pub jwks_cache_secs: u64,
    /// Largest metadata document or key set, in KiB.
    #[serde(default = "default_max_kb")]
    pub max_kb: u64,
    /// Longest wait for one, in milliseconds.
    #[serde(default = "default_timeout")]
    pub timeout_ms: u64,
    /// Fetch the metadata and key set from private, loopback and link-local
    /// addresses too (an identity provider inside the operator's network).
    #[serde(default)]
    pub allow_private: bool,
    /// Plain http URLs (a local identity provider, for tests; needs `allow_private`,
    /// so plain http never reaches a public address).
    #[serde(default)]
    pub allow_http: bool,
    /// The scopes of a token that carries no `scope` or `scp` claim.
    #[serde(default = "default_scopes")]
    pub default_scopes: Vec<String>,
}

fn default_scopes() -> Vec<String> {
    vec!["hub:tools".into(), "chat".into()]
}
fn default_claim() -> String {
    "sub".into()
}
fn default_skew() -> u64 {
    60
}
fn default_refetch() -> u64 {
    60
}
fn default_cache() -> u64 {
    3600
}
fn default_max_kb() -> u64 {
    64
}
fn default_timeout() -> u64 {
    5000
}

impl IssuerConfig {
    /// The first value that cannot work, naming its key.
    pub(super) fn mismatch(&self, i: usize, tokens: &[&str]) -> Option<String> {
        let key = |k: &str| format!("oauth.issuers[{i}].{k}");
        let scheme_ok = |url: &str| {
            url.strip_prefix("https://")
                .or_else(|| url.strip_prefix("http://").filter(|_| self.allow_http))
                .is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/') && !url.contains('#'))
        };
        if !scheme_ok(&self.issuer) {
            return Some(format!(
                "{} {:?} must be an https URL (http only with allow_http)",
                key("issuer"),
                self.issuer
            ));
        }
        if !self.jwks_uri.is_empty() && !scheme_ok(&self.jwks_uri) {
            return Some(format!(
                "{} {:?} must be an https URL (http only with allow_http)",
                key("jwks_uri"),
                self.jwks_uri
            ));
        }
        if self.allow_http && !self.allow_private {
            return Some(format!(
                "{} needs {}: plain http is for an issuer on loopback or a private network",
                key("allow_http"),
                key("allow_private")
            ));
        }
        if let Some(name) = self
            .default_scopes
            .iter()
            .find(|s| !SCOPE_NAMES.contains(&s.as_str()))
        {
            return Some(format!(
                "{}: unknown scope {name:?}: this hub knows hub:tools, chat and operator",
                key("default_scopes")
            ));
        }
        if self.principal_claim.is_empty() {
            return Some(format!(
                "{} must name a claim, like sub or email",
                key("principal_claim")
            ));
        }
        if self.principals.is_empty() {
            return Some(format!(
                "{} maps no {} value to a [[tokens]] name: every token of this issuer would be refused",
                key("principals"),
                self.principal_claim
            ));
        }
        if let Some((value, name)) = self
            .principals
            .iter()
            .find(|(_, n)| !tokens.contains(&n.as_str()))
        {
            return Some(format!(
                "{}: {value:?} maps to {name:?}, which is not a [[tokens]] name",
                key("principals")
            ));
        }
        for (k, v) in [
            ("refetch_secs", self.refetch_secs),
            ("jwks_cache_secs", self.jwks_cache_secs),
            ("max_kb", self.max_kb),
            ("timeout_ms", self.timeout_ms),
        ] {
            if v == 0 {
                return Some(format!("{} must be greater than 0", key(k)));
            }
        }
        if self.skew_secs > 300 {
            return Some(format!(
                "{} must be at most 300; it is {}",
                key("skew_secs"),
                self.skew_secs
            ));
        }
        None
    }
}
