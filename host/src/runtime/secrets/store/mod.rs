//! Where sealed secret values live: [`SecretStore`], owned by the runtime (which
//! reads a value at every call that needs it, so a value set on one replica is
//! used by the next call on every replica). Values are stored sealed only
//! (`super::seal`): neither table ever holds a plaintext.
//!
//! - `sled`: the table `secrets` of the embedded database (one process);
//! - `postgres`: the table `wasmhub_secrets`, shared by every replica;
//! - `conformance`: the suite both pass.

#[cfg(test)]
pub(crate) mod conformance;
#[cfg(feature = "postgres")]
mod postgres;
mod sled;

use crate::storage::{Backend, StorageError};
use std::sync::Arc;

/// One stored secret, sealed.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Sealed {
    /// The sealed bytes (`super::seal`'s format).
    pub bytes: Vec<u8>,
    /// When it was set, Unix milliseconds.
    pub updated_ms: u64,
}

impl std::fmt::Debug for Sealed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealed")
            .field("bytes", &self.bytes.len())
            .field("updated_ms", &self.updated_ms)
            .finish()
    }
}

/// A stored secret's name, never its value.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct StoredName {
    /// The plugin it belongs to.
    pub plugin: String,
    /// The secret's name.
    pub name: String,
    /// When it was set, Unix milliseconds.
    pub updated_ms: u64,
}

/// The sealed secret values of every plugin.
#[async_trait::async_trait]
pub trait SecretStore: Send + Sync {
    /// Stores `sealed` as `plugin`'s secret `name`, replacing any previous value.
    async fn put(&self, plugin: &str, name: &str, sealed: &Sealed) -> Result<(), StorageError>;

    /// `plugin`'s secret `name`.
    async fn get(&self, plugin: &str, name: &str) -> Result<Option<Sealed>, StorageError>;

    /// The names of `plugin`'s secrets (every plugin's with `None`), sorted.
    async fn list(&self, plugin: Option<&str>) -> Result<Vec<StoredName>, StorageError>;

    /// Removes `plugin`'s secret `name`; whether it existed.
    async fn remove(&self, plugin: &str, name: &str) -> Result<bool, StorageError>;
}

/// The store of `backend` (its table created or migrated first).
pub async fn open(backend: &Backend) -> Result<Arc<dyn SecretStore>, StorageError> {
    match backend {
        Backend::Embedded(storage) => Ok(Arc::new(sled::SledSecrets::open(storage)?)),
        #[cfg(feature = "postgres")]
        Backend::Postgres(pg) => Ok(Arc::new(postgres::PgSecrets::open(pg.clone()).await?)),
    }
}
