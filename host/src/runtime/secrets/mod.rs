//! Plugin secrets and configuration the operator supplies: where a value comes
//! from (a reference in `[plugin.NAME.secrets]` read at each call, else the value
//! sealed in the hub's storage by `wasmhub secret set`), how it is sealed, and
//! the operator's `[plugin.NAME]` settings checked against what a plugin's
//! manifest declares.
//!
//! Values are read when a call needs one, never cached: a value set or rotated on
//! any replica is used by the next call.
//!
//! - `call`: a plugin's needs at call time (which header goes where) and one
//!   call's use of them (values used, the secret it missed);
//! - `scrub`: every recognised form of a used value out of what leaves a call;
//! - `seal`: AES-256-GCM under the operator's key, versioned;
//! - `store`: [`SecretStore`] (sled, PostgreSQL) of sealed values;
//! - `settings`: `[plugin.NAME]` against the manifests (config values, names).

pub(super) mod call;
mod scrub;
mod seal;
pub(super) mod settings;
pub mod store;

pub(crate) use call::{CallSecrets, SecretNeeds};
pub(crate) use scrub::Scrubber;
pub use scrub::WINDOW as SCRUB_WINDOW;
pub use seal::{SealKey, SealKeyError, UnsealError};
pub use settings::{SettingsError, SettingsProblem};
pub use store::{Sealed, SecretStore, StoredName};

use crate::config::{PluginSettings, SecretsConfig};
pub(crate) use crate::secret_ref::Secret;
use crate::secret_ref::SecretRef;
use crate::storage::StorageError;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// Why a secret could not be read. No variant holds a value.
#[derive(Debug)]
pub enum SecretError {
    /// A stored value needs the key, and there is none.
    Key(Arc<SealKeyError>),
    /// The storage failed.
    Storage(StorageError),
    /// The stored value does not open.
    Unseal(UnsealError),
    /// An `env:` or `file:` reference names nothing readable.
    Reference {
        /// The reference as configured.
        reference: String,
        /// Why it could not be read (a `secret_ref::SecretError` inside).
        source: std::io::Error,
    },
    /// The value is not UTF-8 text.
    NotText,
    /// This hub was built without a secret store (`plugin check`, tests).
    NoStore,
    /// The value is larger than `secrets.max_value_kb`.
    TooLarge {
        /// `secrets.max_value_kb`.
        limit_kb: u64,
    },
}

impl fmt::Display for SecretError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretError::Key(e) => write!(f, "{e}"),
            SecretError::Storage(e) => write!(f, "secret store: {e}"),
            SecretError::Unseal(e) => write!(f, "{e}"),
            SecretError::Reference { reference, source } => write!(f, "{reference}: {source}"),
            SecretError::NotText => f.write_str("the value is not UTF-8 text"),
            SecretError::NoStore => f.write_str("no secret store is open here"),
            SecretError::TooLarge { limit_kb } => {
                write!(
                    f,
                    "the value is larger than {limit_kb} KiB (secrets.max_value_kb)"
                )
            }
        }
    }
}

impl std::error::Error for SecretError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SecretError::Key(e) => Some(e.as_ref()),
            SecretError::Storage(e) => Some(e),
            SecretError::Unseal(e) => Some(e),
            SecretError::Reference { source, .. } => Some(source),
            SecretError::NotText | SecretError::NoStore | SecretError::TooLarge { .. } => None,
        }
    }
}

/// Where a secret's value is, for `plugin inspect`, `GET /api/plugins` and the console.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum SecretSource {
    /// Sealed in the hub's storage since `updated_ms`.
    Stored {
        /// When it was set, Unix milliseconds.
        updated_ms: u64,
    },
    /// Read from `[plugin.NAME.secrets]`'s reference at each call.
    Reference {
        /// `env:VAR` or `file:/path`.
        reference: String,
    },
    /// Nowhere: calls that need it fail with `missing_secret`.
    Unset,
}

/// The secrets and settings of every plugin: the store of sealed values, the key,
/// and the operator's `[plugin.NAME]` tables.
pub struct Secrets {
    store: Option<Arc<dyn SecretStore>>,
    /// `secrets.max_value_kb`.
    max_value_kb: u64,
    key: Result<Arc<SealKey>, Arc<SealKeyError>>,
    settings: BTreeMap<String, PluginSettings>,
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secrets")
            .field("store", &self.store.is_some())
            .field("plugins", &self.settings.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Default for Secrets {
    fn default() -> Self {
        Secrets::none()
    }
}

impl Secrets {
    /// No store, no key, no settings (`plugin check` and tests): every secret is unset.
    pub fn none() -> Secrets {
        Secrets {
            store: None,
            max_value_kb: SecretsConfig::default().max_value_kb,
            key: Err(Arc::new(SealKeyError::NotConfigured)),
            settings: BTreeMap::new(),
        }
    }

    /// The hub's secrets: `store`, the key `[secrets]` names (read now; its
    /// absence is an error only when a stored value is needed), and the
    /// `[plugin.NAME]` tables (their names checked now).
    pub fn new(
        store: Option<Arc<dyn SecretStore>>,
        config: &SecretsConfig,
        settings: BTreeMap<String, PluginSettings>,
    ) -> Result<Secrets, SettingsError> {
        settings::check_names(&settings)?;
        Ok(Secrets {
            store,
            max_value_kb: config.max_value_kb,
            key: SealKey::from_config(config).map(Arc::new).map_err(Arc::new),
            settings,
        })
    }

    /// The operator's settings of `plugin` (empty when it has none).
    pub fn settings(&self, plugin: &str) -> Option<&PluginSettings> {
        self.settings.get(plugin)
    }

    /// `plugin`'s secret `name` now: its reference read, else its stored value
    /// unsealed; `None` when it is set nowhere.
    pub(crate) async fn get(&self, plugin: &str, name: &str) -> Result<Option<Secret>, SecretError> {
        if let Some(reference) = self.reference(plugin, name) {
            return read_reference(&reference, self.max_value_kb).map(Some);
        }
        let Some(store) = &self.store else { return Ok(None) };
        let Some(sealed) = store.get(plugin, name).await.map_err(SecretError::Storage)? else {
            return Ok(None);
        };
        let key = self.key.as_ref().map_err(|e| SecretError::Key(e.clone()))?;
        let plain = key
            .open(plugin, name, &sealed.bytes)
            .map_err(SecretError::Unseal)?;
        String::from_utf8(plain)
            .map(|v| Some(Secret::new(v)))
            .map_err(|_| SecretError::NotText)
    }

    /// Where each of `names` of `plugin` comes from (never a value).
    pub async fn sources(&self, plugin: &str, names: &[&str]) -> Result<Vec<SecretSource>, StorageError> {
        let stored = match &self.store {
            Some(store) if !names.is_empty() => store.list(Some(plugin)).await?,
            _ => Vec::new(),
        };
        Ok(names
            .iter()
            .map(|name| match self.reference(plugin, name) {
                Some(r) => SecretSource::Reference {
                    reference: r.to_string(),
                },
                None => stored
                    .iter()
                    .find(|s| s.name == *name)
                    .map_or(SecretSource::Unset, |s| SecretSource::Stored {
                        updated_ms: s.updated_ms,
                    }),
            })
            .collect())
    }

    /// Seals `value` and stores it as `plugin`'s secret `name`.
    pub async fn set(&self, plugin: &str, name: &str, value: &str, now_ms: u64) -> Result<(), SecretError> {
        if value.len() > self.max_value_bytes() {
            return Err(SecretError::TooLarge {
                limit_kb: self.max_value_kb,
            });
        }
        let key = self.key.as_ref().map_err(|e| SecretError::Key(e.clone()))?;
        let store = self.store()?;
        let sealed = Sealed {
            bytes: key.seal(plugin, name, value.as_bytes()),
            updated_ms: now_ms,
        };
        store
            .put(plugin, name, &sealed)
            .await
            .map_err(SecretError::Storage)
    }

    /// `secrets.max_value_kb` in bytes: the largest value taken.
    pub fn max_value_bytes(&self) -> usize {
        (self.max_value_kb as usize).saturating_mul(1024)
    }

    /// The store (for listing and removing); an error when there is none.
    pub fn store(&self) -> Result<&Arc<dyn SecretStore>, SecretError> {
        self.store.as_ref().ok_or(SecretError::NoStore)
    }

    fn reference(&self, plugin: &str, name: &str) -> Option<SecretRef> {
        let text = self.settings.get(plugin)?.secrets.get(name)?;
        SecretRef::parse_reference(text).ok()
    }
}

/// The value a reference names, now (a file at most `secrets.max_value_kb`).
fn read_reference(reference: &SecretRef, max_kb: u64) -> Result<Secret, SecretError> {
    reference
        .resolve(max_kb.saturating_mul(1024))
        .map_err(|e| match e {
            crate::secret_ref::SecretError::FileTooLarge { .. } => SecretError::TooLarge { limit_kb: max_kb },
            e => SecretError::Reference {
                reference: reference.to_string(),
                source: std::io::Error::other(e),
            },
        })
}
