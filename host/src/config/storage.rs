//! `[storage]`: where sessions, the audit log, accounting records, leases and MCP
//! sessions live: the embedded backend in `data_dir` (a sled database and record
//! logs; one process) or a PostgreSQL database shared by several replicas. The backends are
//! `crate::storage`'s; this is the shape of the file.

use serde::Deserialize;

/// Which database holds the hub's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StorageBackend {
    /// The embedded backend under `data_dir`: a sled database and record logs
    /// (one process). `sled`, its name before it kept record logs, still reads.
    #[default]
    Embedded,
    /// A PostgreSQL database (several replicas; the `postgres` cargo feature).
    Postgres,
}

impl StorageBackend {
    /// The name used in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            StorageBackend::Embedded => "embedded",
            StorageBackend::Postgres => "postgres",
        }
    }

    /// The backend a name in the file means.
    fn from_name(name: &str) -> Option<StorageBackend> {
        match name {
            "embedded" | "sled" => Some(StorageBackend::Embedded),
            "postgres" => Some(StorageBackend::Postgres),
            _ => None,
        }
    }
}

// By hand rather than derived: the old name reads too, and a wrong one is
// reported with its key (serde's own message names only the variants). A visitor,
// so the error arises inside the value and keeps its line (`crate::toml`).
impl<'de> Deserialize<'de> for StorageBackend {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<StorageBackend, D::Error> {
        d.deserialize_str(BackendName)
    }
}

struct BackendName;

impl serde::de::Visitor<'_> for BackendName {
    type Value = StorageBackend;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a storage backend name")
    }

    fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<StorageBackend, E> {
        StorageBackend::from_name(name).ok_or_else(|| {
            E::custom(format!(
                "storage.backend must be \"embedded\" (or its old name \"sled\") or \"postgres\", not {name:?}"
            ))
        })
    }
}

/// The `[storage]` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StorageConfig {
    /// `embedded` (default; `sled` is read as it) or `postgres`.
    pub backend: StorageBackend,
    /// The environment variable holding the PostgreSQL connection string (never the
    /// file: it carries a password).
    pub url_env: String,
    /// Most PostgreSQL connections this replica opens (LISTEN connections aside).
    pub pool_size: usize,
    /// Longest a live turn's lease lasts without renewal, in seconds: how long a
    /// session stays busy after the replica running its turn died.
    pub lease_secs: u64,
    /// Longest a storage call waits for a pooled connection, in milliseconds.
    pub connect_timeout_ms: u64,
    /// Most chat sessions one principal may keep stored (0: no limit); a token's
    /// own `max_sessions` replaces it.
    pub max_sessions: u64,
    /// Most megabytes of chat messages one principal may keep stored (0: no
    /// limit); a token's own `max_stored_mb` replaces it.
    pub max_stored_mb: u64,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            backend: StorageBackend::Embedded,
            url_env: "DATABASE_URL".into(),
            pool_size: 8,
            lease_secs: 15,
            connect_timeout_ms: 5_000,
            max_sessions: 10_000,
            max_stored_mb: 1024,
        }
    }
}

impl StorageConfig {
    /// The first value that cannot work, said for the operator.
    pub(super) fn mismatch(&self) -> Option<String> {
        if self.url_env.is_empty() {
            return Some("storage.url_env must name an environment variable".into());
        }
        if self.pool_size == 0 {
            return Some("storage.pool_size must be greater than 0".into());
        }
        if !(2..=3600).contains(&self.lease_secs) {
            return Some(format!(
                "storage.lease_secs must be between 2 and 3600 (it is {})",
                self.lease_secs
            ));
        }
        if self.connect_timeout_ms == 0 {
            return Some("storage.connect_timeout_ms must be greater than 0".into());
        }
        None
    }
}
