//! Why a storage call failed: one enum for every backend, each variant keeping
//! its cause for `source()`.

use std::path::PathBuf;

/// Why storage failed; each variant keeps its cause for `source()`.
#[derive(Debug)]
pub enum StorageError {
    /// The data directory could not be created.
    CreateDir {
        /// The data directory.
        path: PathBuf,
        /// The filesystem error.
        source: std::io::Error,
    },
    /// The database could not be opened (locked by another process, corrupt, unreadable).
    Open {
        /// The data directory (the database lives in its `store` subdirectory).
        path: PathBuf,
        /// sled's error.
        source: sled::Error,
    },
    /// A read or write failed.
    Io(sled::Error),
    /// A record log's file could not be read or written.
    File {
        /// The file or folder.
        path: PathBuf,
        /// What the hub was doing.
        during: &'static str,
        /// The filesystem error.
        source: std::io::Error,
    },
    /// A value could not be turned into its stored JSON form.
    Encode(serde_json::Error),
    /// A stored value did not decode.
    Corrupt {
        /// The table holding the value.
        table: String,
        /// The JSON decoding error.
        source: serde_json::Error,
    },
    /// Stored values decode but contradict each other (a session's message count
    /// against its stored messages); `message` says how.
    Inconsistent {
        /// The table whose values disagree.
        table: String,
        /// What contradicts what, for the operator.
        message: String,
    },
    /// `[storage] backend = "postgres"` in a binary built without the `postgres`
    /// cargo feature.
    PostgresNotBuilt,
    /// The environment variable `storage.url_env` names is not set.
    MissingUrl {
        /// The variable's name.
        env: String,
    },
    /// A blocking storage task could not finish (the runtime is shutting down).
    Shutdown,
    /// No pooled PostgreSQL connection came free within `storage.connect_timeout_ms`.
    PoolTimeout {
        /// `storage.pool_size`.
        pool_size: usize,
        /// `storage.connect_timeout_ms`.
        waited_ms: u64,
    },
    /// The database holds a newer schema than this binary knows.
    SchemaTooNew {
        /// The store whose schema it is.
        component: String,
        /// The version found in `wasmhub_schema`.
        found: i32,
        /// The newest version this binary knows.
        known: usize,
    },
    /// A PostgreSQL call failed.
    #[cfg(feature = "postgres")]
    Postgres {
        /// What the hub was doing.
        during: &'static str,
        /// The client's error.
        source: tokio_postgres::Error,
    },
}

#[cfg(feature = "postgres")]
impl StorageError {
    /// For `map_err`: a PostgreSQL error while doing `during`.
    pub fn pg(during: &'static str) -> impl FnOnce(tokio_postgres::Error) -> StorageError {
        move |source| StorageError::Postgres { during, source }
    }
}

impl std::fmt::Display for StorageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StorageError::CreateDir { path, source } => {
                write!(f, "cannot open the store at {}: {source}", path.display())
            }
            StorageError::Open { path, source } => {
                write!(f, "cannot open the store at {}: {source}", path.display())
            }
            StorageError::Io(e) => write!(f, "storage error: {e}"),
            StorageError::File { path, during, source } => {
                write!(f, "storage error: cannot {during} ({}): {source}", path.display())
            }
            StorageError::Encode(e) => write!(f, "storage error: {e}"),
            StorageError::Corrupt { table, source } => {
                write!(f, "stored value in {table} does not decode: {source}")
            }
            StorageError::Inconsistent { table, message } => {
                write!(f, "stored value in {table} does not decode: {message}")
            }
            StorageError::PostgresNotBuilt => write!(
                f,
                "storage.backend is \"postgres\" but this wasmhub was built without the `postgres` feature \
                 (cargo build --release --features postgres)"
            ),
            StorageError::MissingUrl { env } => write!(
                f,
                "storage.backend is \"postgres\" but the environment variable {env} (storage.url_env) is not set"
            ),
            StorageError::Shutdown => write!(f, "storage error: the hub is shutting down"),
            StorageError::PoolTimeout { pool_size, waited_ms } => write!(
                f,
                "storage error: none of the {pool_size} PostgreSQL connections (storage.pool_size) \
                 came free within {waited_ms} ms (storage.connect_timeout_ms)"
            ),
            StorageError::SchemaTooNew {
                component,
                found,
                known,
            } => write!(
                f,
                "the database holds version {found} of the {component} schema but this wasmhub knows \
                 only up to {known}: run a newer wasmhub"
            ),
            #[cfg(feature = "postgres")]
            StorageError::Postgres { during, source } => {
                write!(f, "storage error: PostgreSQL failed to {during}: {source}")
            }
        }
    }
}

impl std::error::Error for StorageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StorageError::CreateDir { source, .. } | StorageError::File { source, .. } => Some(source),
            StorageError::Open { source, .. } | StorageError::Io(source) => Some(source),
            StorageError::Encode(source) | StorageError::Corrupt { source, .. } => Some(source),
            #[cfg(feature = "postgres")]
            StorageError::Postgres { source, .. } => Some(source),
            StorageError::Inconsistent { .. }
            | StorageError::PostgresNotBuilt
            | StorageError::MissingUrl { .. }
            | StorageError::Shutdown
            | StorageError::PoolTimeout { .. }
            | StorageError::SchemaTooNew { .. } => None,
        }
    }
}

impl From<sled::Error> for StorageError {
    fn from(e: sled::Error) -> Self {
        StorageError::Io(e)
    }
}
