//! OAuth 2.1 for remote clients: the hub's built-in authorization server
//! (`oauth.builtin = true`) and the verification of the access tokens it issues,
//! and of the JWT access tokens of external identity providers (`[[oauth.issuers]]`).
//! The HTTP routes are `crate::surfaces::oauth`'s; the decision whether a request
//! may run is still the hub's (`crate::hub::auth`), which asks [`Issuer`] and
//! [`JwtIssuers`] as its token verifiers.
//!
//! - `secret`: random secrets and the digests they are stored under;
//! - `pkce`: S256 challenges and verifiers; `redirect`: redirect URI rules;
//! - `store`: the records, in the embedded database or PostgreSQL ([`store::GrantStore`]);
//! - `grants`: codes, access and refresh tokens, rotation, revocation, verification;
//! - `client`: what is known of a client; `clients`: dynamic client registration (RFC 7591), its rate limit and cap,
//!   and client lookup; `cimd`: client ID metadata documents, fetched and cached;
//! - `signin`: one-time sign-in codes an operator creates for a principal;
//! - `jwt`: JWT access tokens of external identity providers, checked against their keys.

pub(crate) mod cimd;
mod client;
pub(crate) mod clients;
pub(crate) mod grants;
pub(crate) mod jwt;
pub(crate) mod pkce;
pub(crate) mod redirect;
mod secret;
pub(crate) mod signin;
pub(crate) mod store;
#[cfg(test)]
pub(crate) mod test_support;

use crate::config::OAuthConfig;
use crate::hub::Resource;
use crate::storage::{Backend, StorageError};
use std::sync::Arc;

pub(crate) use clients::Clients;
pub(crate) use grants::Issuer;
pub(crate) use jwt::JwtIssuers;
pub(crate) use signin::SignInCodes;

/// The wall clock in Unix milliseconds (tests move their own).
pub(crate) type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// The configuration the server works with, in milliseconds and full URLs.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// `oauth.public_url` without a trailing slash: the issuer identifier too.
    pub base: String,
    pub access_ms: u64,
    pub refresh_ms: u64,
    pub code_ms: u64,
    pub signin_ms: u64,
    pub unused_client_ms: u64,
    pub registrations_per_minute: u32,
    pub max_unused_clients: u64,
    /// What a client may register.
    pub bounds: clients::Bounds,
    /// How client ID metadata documents are fetched.
    pub docs: cimd::DocPolicy,
}

impl Settings {
    pub(crate) fn from_config(c: &OAuthConfig) -> Settings {
        let ms = |secs: u64| secs.saturating_mul(1000);
        Settings {
            base: c.base().to_string(),
            access_ms: ms(c.access_token_secs),
            refresh_ms: ms(c.refresh_token_secs),
            code_ms: ms(c.code_secs),
            signin_ms: ms(c.signin_code_secs),
            unused_client_ms: ms(c.unused_client_secs),
            registrations_per_minute: c.registrations_per_minute,
            max_unused_clients: c.max_unused_clients,
            bounds: clients::Bounds::from_config(c),
            docs: cimd::DocPolicy::from_config(c),
        }
    }

    /// The issuer identifier (RFC 8414 §2; RFC 9207's `iss`).
    pub(crate) fn issuer(&self) -> &str {
        &self.base
    }

    /// The URL of `resource`.
    pub(crate) fn resource(&self, resource: Resource) -> String {
        format!("{}{}", self.base, resource.suffix())
    }

    /// Which resource `url` names, if it is one of the hub's.
    pub(crate) fn resource_named(&self, url: &str) -> Option<Resource> {
        [Resource::Mcp, Resource::Api]
            .into_iter()
            .find(|r| self.resource(*r) == url.trim_end_matches('/'))
    }
}

/// The built-in authorization server: its settings, issuer, clients and sign-in
/// codes over one store.
pub(crate) struct AuthServer {
    pub settings: Arc<Settings>,
    pub issuer: Arc<Issuer>,
    pub clients: Clients,
    pub signin: SignInCodes,
}

impl AuthServer {
    /// The server over the store in `backend`.
    pub(crate) async fn open(config: &OAuthConfig, backend: &Backend) -> Result<AuthServer, StorageError> {
        let store = store::open(backend).await?;
        Ok(AuthServer::with(
            store,
            Settings::from_config(config),
            Arc::new(crate::clock::now_ms),
        ))
    }

    /// The server over `store` with `clock`.
    pub(crate) fn with(store: Arc<dyn store::GrantStore>, settings: Settings, clock: Clock) -> AuthServer {
        let settings = Arc::new(settings);
        AuthServer {
            issuer: Arc::new(Issuer::new(store.clone(), settings.clone(), clock.clone())),
            clients: Clients::new(store.clone(), settings.clone(), clock.clone()),
            signin: SignInCodes::new(store, settings.clone(), clock),
            settings,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resources_derive_from_the_public_url() {
        let s = Settings::from_config(&OAuthConfig {
            public_url: "https://hub.example/".into(),
            ..OAuthConfig::default()
        });
        assert_eq!(s.issuer(), "https://hub.example");
        assert_eq!(s.resource(Resource::Mcp), "https://hub.example/mcp");
        assert_eq!(s.resource(Resource::Api), "https://hub.example");
        assert_eq!(s.resource_named("https://hub.example/mcp"), Some(Resource::Mcp));
        assert_eq!(s.resource_named("https://hub.example/"), Some(Resource::Api));
        assert_eq!(s.resource_named("https://hub.example/mcp/x"), None);
        assert_eq!(s.resource_named("https://other.example/mcp"), None);
        assert_eq!(s.code_ms, 60_000);
    }
}
