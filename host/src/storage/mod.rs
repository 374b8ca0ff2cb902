//! Durable storage handles: the embedded backend (a sled database and record
//! logs beside it; one process) or a PostgreSQL database shared by several
//! replicas (the `postgres` feature).
//!
//! What is stored, and how, belongs to the layers that store it: each owns a
//! small async trait and its implementations over these handles (`agent::store`,
//! `hub::audit`, `hub::accounting`, `surfaces::mcp`). This module only opens the
//! backend `[storage]` names ([`Backend::open`]), runs blocking sled work off the
//! async workers ([`blocking`]), keeps the embedded backend's tables and its
//! append-only record logs (segment files, or memory for a temporary database:
//! [`log`]), and, for PostgreSQL, pools connections, migrates each store's
//! schema and delivers notifications.

mod embedded;
mod error;
pub(crate) mod log;
#[cfg(feature = "postgres")]
pub mod postgres;

pub(crate) use embedded::SharedLog;
pub use embedded::{Storage, Table};
pub use error::StorageError;
#[cfg(feature = "postgres")]
pub use postgres::Postgres;

use crate::config::{Config, StorageBackend};

/// The database the hub's stores live in. Cheap to clone.
#[derive(Clone)]
pub enum Backend {
    /// The embedded backend under `data_dir`: a sled database and record logs.
    Embedded(Storage),
    /// A PostgreSQL database shared by every replica.
    #[cfg(feature = "postgres")]
    Postgres(Postgres),
}

impl Backend {
    /// Opens the backend `config.storage` names: the embedded one in `data_dir`,
    /// or a connection pool to the database in the environment variable
    /// `storage.url_env` names.
    pub async fn open(config: &Config) -> Result<Backend, StorageError> {
        match config.storage.backend {
            StorageBackend::Embedded => {
                let dir = config.data_dir.clone();
                blocking(move || Storage::open(&dir)).await.map(Backend::Embedded)
            }
            #[cfg(feature = "postgres")]
            StorageBackend::Postgres => Postgres::connect(&config.storage).await.map(Backend::Postgres),
            #[cfg(not(feature = "postgres"))]
            StorageBackend::Postgres => Err(StorageError::PostgresNotBuilt),
        }
    }

    /// An embedded backend that lives in memory only and leaves nothing on disk
    /// (tests, `wasmhub call` when the data directory cannot be opened).
    pub fn temporary() -> Result<Backend, StorageError> {
        Storage::temporary().map(Backend::Embedded)
    }

    /// `embedded` or `postgres`, for the log.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Embedded(_) => StorageBackend::Embedded.as_str(),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => StorageBackend::Postgres.as_str(),
        }
    }
}

/// Runs `work` (sled calls: any of them may fsync) on tokio's blocking pool, so
/// storage never stalls an async worker. A panic in `work` resumes here.
pub async fn blocking<T, F>(work: F) -> Result<T, StorageError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, StorageError> + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => Err(StorageError::Shutdown),
    }
}
