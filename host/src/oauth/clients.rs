//! OAuth clients: dynamic client registration (RFC 7591) and the lookup of a
//! registered client. Every client is public (`token_endpoint_auth_method:
//! none`, PKCE proves the code's redeemer), so a registration grants nothing by
//! itself; what it costs is storage, hence a per-replica rate limit
//! (`oauth.registrations_per_minute`) and a cap on registrations that never
//! completed a sign-in (`oauth.max_unused_clients`), which also expire
//! (`oauth.unused_client_secs`).

use super::cimd::{self, DocError, MetadataDocs};
pub(crate) use super::client::{Bounds, ClientInfo};
use super::redirect::{self, BadRedirect};
use super::secret;
use super::store::{GrantStore, Kind, Record};
use super::{Clock, Settings};
use crate::storage::StorageError;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

/// How long expired records are kept (so "expired" is told from "unknown").
const GRACE_MS: u64 = 86_400_000;

/// The registration request's fields the hub reads; others are ignored (RFC 7591 §2).
#[derive(Debug, Deserialize)]
pub(crate) struct Metadata {
    #[serde(default)]
    redirect_uris: Option<Vec<String>>,
    #[serde(default)]
    client_name: Option<String>,
    #[serde(default)]
    grant_types: Option<Vec<String>>,
    #[serde(default)]
    response_types: Option<Vec<String>>,
}

/// Why a registration is refused.
#[derive(Debug)]
pub(crate) enum RegisterError {
    /// A redirect URI cannot be registered (`invalid_redirect_uri`).
    Redirect(BadRedirect),
    /// Some other field is wrong (`invalid_client_metadata`).
    Metadata(String),
    /// More than `oauth.registrations_per_minute` this minute.
    RateLimited { per_minute: u32 },
    /// `oauth.max_unused_clients` registrations have not signed in yet.
    TooManyUnused { max: u64 },
    /// The store failed.
    Storage(StorageError),
}

impl RegisterError {
    /// The RFC 7591 §3.2.2 error code (the limits have none: `rate_limited`).
    pub(crate) fn code(&self) -> &'static str {
        match self {
            RegisterError::Redirect(_) => "invalid_redirect_uri",
            RegisterError::Metadata(_) => "invalid_client_metadata",
            RegisterError::RateLimited { .. } | RegisterError::TooManyUnused { .. } => "rate_limited",
            RegisterError::Storage(_) => "server_error",
        }
    }
}

impl std::fmt::Display for RegisterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegisterError::Redirect(e) => e.fmt(f),
            RegisterError::Metadata(why) => f.write_str(why),
            RegisterError::RateLimited { per_minute } => write!(
                f,
                "too many client registrations: at most {per_minute} a minute (oauth.registrations_per_minute)"
            ),
            RegisterError::TooManyUnused { max } => write!(
                f,
                "{max} registered clients have not signed in yet (oauth.max_unused_clients); try again later"
            ),
            RegisterError::Storage(_) => f.write_str("the authorization server's storage failed"),
        }
    }
}

impl std::error::Error for RegisterError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RegisterError::Redirect(e) => Some(e),
            RegisterError::Storage(e) => Some(e),
            _ => None,
        }
    }
}

impl From<StorageError> for RegisterError {
    fn from(e: StorageError) -> Self {
        RegisterError::Storage(e)
    }
}

/// Why a client id names no usable client.
#[derive(Debug)]
pub(crate) enum LookupError {
    /// The store failed.
    Storage(StorageError),
    /// The client id is a metadata document URL, and the document cannot be used.
    Document { url: String, source: DocError },
}

impl std::fmt::Display for LookupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LookupError::Storage(_) => f.write_str("the authorization server's storage failed"),
            LookupError::Document { url, source } => {
                write!(f, "the client's metadata document {url} cannot be used: {source}")
            }
        }
    }
}

impl std::error::Error for LookupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LookupError::Storage(e) => Some(e),
            LookupError::Document { source, .. } => Some(source),
        }
    }
}

/// Registrations counted in the current minute, and when the store was last purged.
struct Window {
    started_ms: u64,
    count: u32,
    purged_ms: u64,
}

/// The registered clients.
pub(crate) struct Clients {
    store: Arc<dyn GrantStore>,
    settings: Arc<Settings>,
    clock: Clock,
    window: Mutex<Window>,
    /// Clients that are URLs of their metadata documents.
    docs: MetadataDocs,
}

impl Clients {
    pub(crate) fn new(store: Arc<dyn GrantStore>, settings: Arc<Settings>, clock: Clock) -> Clients {
        Clients {
            docs: MetadataDocs::new(settings.docs.clone()),
            store,
            settings,
            clock,
            window: Mutex::new(Window {
                started_ms: 0,
                count: 0,
                purged_ms: 0,
            }),
        }
    }

    /// Registers a client with `metadata`, within the rate limit and the cap.
    pub(crate) async fn register(&self, metadata: Metadata) -> Result<ClientInfo, RegisterError> {
        let info = self.checked(metadata)?;
        let now = (self.clock)();
        let purge = self.admit(now)?;
        if purge {
            let purged = self.store.purge(now.saturating_sub(GRACE_MS)).await?;
            if purged > 0 {
                crate::debug!("oauth: purged {purged} expired records");
            }
        }
        let unused = self.store.count_live(Kind::UnusedClient, now).await?;
        if unused >= self.settings.max_unused_clients {
            return Err(RegisterError::TooManyUnused {
                max: self.settings.max_unused_clients,
            });
        }
        let expires_ms = now + self.settings.unused_client_ms;
        let info = ClientInfo {
            client_id_issued_at: now / 1000,
            ..info
        };
        self.store
            .put(Kind::Client, &info.client_id, &stored(&info, expires_ms))
            .await?;
        let mark = stored(&serde_json::json!({}), expires_ms);
        self.store.put(Kind::UnusedClient, &info.client_id, &mark).await?;
        Ok(info)
    }

    /// Counts a registration against this minute's limit; whether it is time
    /// to purge expired records too.
    fn admit(&self, now: u64) -> Result<bool, RegisterError> {
        let mut w = self.window.lock().unwrap_or_else(|p| p.into_inner());
        if now.saturating_sub(w.started_ms) >= 60_000 {
            w.started_ms = now;
            w.count = 0;
        }
        if w.count >= self.settings.registrations_per_minute {
            return Err(RegisterError::RateLimited {
                per_minute: self.settings.registrations_per_minute,
            });
        }
        w.count += 1;
        let purge = now.saturating_sub(w.purged_ms) >= 60_000;
        if purge {
            w.purged_ms = now;
        }
        Ok(purge)
    }

    /// The metadata checked, as a client to store (its id new).
    fn checked(&self, m: Metadata) -> Result<ClientInfo, RegisterError> {
        let bounds = self.settings.bounds;
        let uris = m.redirect_uris.unwrap_or_default();
        if uris.is_empty() || uris.len() > bounds.redirect_uris {
            return Err(RegisterError::Metadata(format!(
                "redirect_uris must list 1 to {} URIs (oauth.max_redirect_uris)",
                bounds.redirect_uris
            )));
        }
        for uri in &uris {
            if uri.len() > bounds.uri_bytes {
                return Err(RegisterError::Metadata(format!(
                    "a redirect URI is longer than {} bytes (oauth.max_redirect_uri_bytes)",
                    bounds.uri_bytes
                )));
            }
            redirect::check_registrable(uri).map_err(RegisterError::Redirect)?;
        }
        let allowed = |list: &Option<Vec<String>>, ok: &[&str], field: &str| match list {
            Some(l) if l.iter().any(|g| !ok.contains(&g.as_str())) => Err(RegisterError::Metadata(format!(
                "{field} may only hold {}",
                ok.join(", ")
            ))),
            _ => Ok(()),
        };
        allowed(
            &m.grant_types,
            &["authorization_code", "refresh_token"],
            "grant_types",
        )?;
        allowed(&m.response_types, &["code"], "response_types")?;
        let name = m.client_name.unwrap_or_default();
        if name.chars().count() > bounds.name_chars || name.chars().any(char::is_control) {
            return Err(RegisterError::Metadata(format!(
                "client_name must be at most {} characters (oauth.max_client_name_chars), without control characters",
                bounds.name_chars
            )));
        }
        Ok(ClientInfo {
            client_id: secret::id("client"),
            client_name: name,
            redirect_uris: uris,
            client_id_issued_at: 0,
        })
    }

    /// The client `client_id`: a registered one (unless unknown or expired), or
    /// the one its metadata document describes when the id is its URL.
    pub(crate) async fn get(&self, client_id: &str) -> Result<Option<ClientInfo>, LookupError> {
        if cimd::is_url(client_id) {
            return self
                .docs
                .client(client_id)
                .await
                .map(Some)
                .map_err(|source| LookupError::Document {
                    url: client_id.to_string(),
                    source,
                });
        }
        self.registered(client_id).await.map_err(LookupError::Storage)
    }

    async fn registered(&self, client_id: &str) -> Result<Option<ClientInfo>, StorageError> {
        let Some(r) = self.store.get(Kind::Client, client_id).await? else {
            return Ok(None);
        };
        if r.expires_ms <= (self.clock)() {
            return Ok(None);
        }
        serde_json::from_value(r.value)
            .map(Some)
            .map_err(|source| StorageError::Corrupt {
                table: "oauth".into(),
                source,
            })
    }

    /// Records that `client` completed a sign-in: it no longer counts as unused
    /// and lives as long as the refresh tokens it may hold.
    pub(crate) async fn mark_used(&self, client: &ClientInfo) -> Result<(), StorageError> {
        if cimd::is_url(&client.client_id) {
            // Nothing is stored for a metadata document's client.
            return Ok(());
        }
        let expires_ms = (self.clock)() + self.settings.refresh_ms;
        self.store
            .put(Kind::Client, &client.client_id, &stored(client, expires_ms))
            .await?;
        self.store.remove(Kind::UnusedClient, &client.client_id).await?;
        Ok(())
    }
}

fn stored<T: Serialize>(value: &T, expires_ms: u64) -> Record {
    Record {
        value: serde_json::to_value(value).expect("client records serialize"),
        expires_ms,
        spent: false,
    }
}

#[cfg(test)]
#[path = "clients_tests.rs"]
mod tests;
