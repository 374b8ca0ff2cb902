//! `[oauth]`: the hub as an OAuth 2.1 protected resource and, with `builtin = true`,
//! its own authorization server. Off unless the section names a `public_url`: then
//! nothing changes (no discovery documents, the plain bearer challenge), so clients
//! that send a configured header keep doing so. The protocol is `crate::oauth`'s;
//! this is the shape of the file and the limits every refusal names.

use super::IssuerConfig;
use serde::Deserialize;

/// The OAuth scopes the hub knows, by wire name (`crate::hub::Scope` is named by
/// these; config keys that list scopes are checked against them).
pub const SCOPE_NAMES: [&str; 3] = ["hub:tools", "chat", "operator"];

/// The `[oauth]` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OAuthConfig {
    /// The hub's external URL as clients type it (`https://hub.example.com`); the
    /// protected resources are this URL plus `/mcp`, and this URL (the API root).
    /// Empty: OAuth is off.
    pub public_url: String,
    /// Whether the hub is its own authorization server (sign-in codes and hub
    /// tokens prove who a person is).
    pub builtin: bool,
    /// Lifetime of an access token, in seconds.
    pub access_token_secs: u64,
    /// Lifetime of a refresh token (and of its family), in seconds.
    pub refresh_token_secs: u64,
    /// Lifetime of an authorization code, in seconds (at most 60).
    pub code_secs: u64,
    /// Lifetime of a sign-in code an operator creates, in seconds.
    pub signin_code_secs: u64,
    /// Dynamic client registrations this replica accepts per minute (429 past it).
    pub registrations_per_minute: u32,
    /// Registered clients that never completed a sign-in, kept at most (429 past it).
    pub max_unused_clients: u64,
    /// How long a registered client may stay unused before it is forgotten, in seconds.
    pub unused_client_secs: u64,
    /// Most redirect URIs one client registers.
    pub max_redirect_uris: usize,
    /// Longest redirect URI a client registers, in bytes.
    pub max_redirect_uri_bytes: usize,
    /// Longest client name, in characters (a metadata document's is cut to it).
    pub max_client_name_chars: usize,
    /// Whether a client may be an https URL naming its client ID metadata document.
    pub client_metadata_documents: bool,
    /// Fetch metadata documents from private, loopback and link-local addresses too.
    pub client_metadata_private: bool,
    /// Accept `http://` client ids (local testing only; needs `client_metadata_private`).
    pub client_metadata_http: bool,
    /// Largest metadata document, in KiB.
    pub client_metadata_max_kb: u64,
    /// Longest wait for a metadata document, in milliseconds.
    pub client_metadata_timeout_ms: u64,
    /// How long a fetched metadata document is used before it is fetched again, in seconds.
    pub client_metadata_cache_secs: u64,
    /// Most metadata documents this replica keeps cached at once.
    pub client_metadata_max_cached: usize,
    /// External identity providers whose JWT access tokens are accepted.
    pub issuers: Vec<IssuerConfig>,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        OAuthConfig {
            public_url: String::new(),
            builtin: false,
            access_token_secs: 900,
            refresh_token_secs: 30 * 86_400,
            code_secs: 60,
            signin_code_secs: 600,
            registrations_per_minute: 20,
            max_unused_clients: 1000,
            unused_client_secs: 86_400,
            max_redirect_uris: 10,
            max_redirect_uri_bytes: 2000,
            max_client_name_chars: 200,
            client_metadata_documents: true,
            client_metadata_private: false,
            client_metadata_http: false,
            client_metadata_max_kb: 5,
            client_metadata_timeout_ms: 5000,
            client_metadata_cache_secs: 300,
            client_metadata_max_cached: 1000,
            issuers: Vec::new(),
        }
    }
}

impl OAuthConfig {
    /// Whether the hub is an OAuth protected resource.
    pub fn enabled(&self) -> bool {
        !self.public_url.is_empty()
    }

    /// `public_url` without a trailing slash.
    pub fn base(&self) -> &str {
        self.public_url.trim_end_matches('/')
    }

    /// The first value that cannot work, said for the operator.
    pub(super) fn mismatch(&self, tokens: &[&str]) -> Option<String> {
        let has_tokens = !tokens.is_empty();
        if !self.enabled() {
            if !self.issuers.is_empty() {
                return Some("oauth.issuers needs oauth.public_url (the hub's external URL)".into());
            }
            return self
                .builtin
                .then(|| "oauth.builtin needs oauth.public_url (the hub's external URL)".into());
        }
        let url = self.base();
        let rest = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"));
        match rest {
            Some(host) if !host.is_empty() && !host.contains(['?', '#']) => {}
            _ => {
                return Some(format!(
                    "oauth.public_url {:?} must be an http(s) URL without query or fragment, like https://hub.example.com",
                    self.public_url
                ));
            }
        }
        if self.builtin && !has_tokens {
            return Some(
                "oauth.builtin maps every sign-in to a [[tokens]] entry's policy: configure at least one token".into(),
            );
        }
        if self.code_secs == 0 || self.code_secs > 60 {
            return Some(format!(
                "oauth.code_secs must be between 1 and 60; it is {}",
                self.code_secs
            ));
        }
        for (key, value) in [
            ("oauth.max_redirect_uris", self.max_redirect_uris as u64),
            ("oauth.max_redirect_uri_bytes", self.max_redirect_uri_bytes as u64),
            ("oauth.max_client_name_chars", self.max_client_name_chars as u64),
            (
                "oauth.client_metadata_max_cached",
                self.client_metadata_max_cached as u64,
            ),
            ("oauth.access_token_secs", self.access_token_secs),
            ("oauth.refresh_token_secs", self.refresh_token_secs),
            ("oauth.signin_code_secs", self.signin_code_secs),
            ("oauth.unused_client_secs", self.unused_client_secs),
            ("oauth.client_metadata_max_kb", self.client_metadata_max_kb),
            (
                "oauth.client_metadata_timeout_ms",
                self.client_metadata_timeout_ms,
            ),
        ] {
            if value == 0 {
                return Some(format!("{key} must be greater than 0"));
            }
        }
        if let Some(problem) = self
            .issuers
            .iter()
            .enumerate()
            .find_map(|(i, c)| c.mismatch(i, tokens))
        {
            return Some(problem);
        }
        if let Some(i) = self
            .issuers
            .iter()
            .enumerate()
            .position(|(i, c)| self.issuers[..i].iter().any(|o| o.issuer == c.issuer))
        {
            return Some(format!(
                "oauth.issuers[{i}].issuer names the same issuer as an earlier entry"
            ));
        }
        if self.client_metadata_http && !self.client_metadata_private {
            return Some(
                "oauth.client_metadata_http needs oauth.client_metadata_private: http client ids are for local testing"
                    .into(),
            );
        }
        None
    }
}
