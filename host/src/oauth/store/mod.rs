//! Where the authorization server keeps what it issued: [`GrantStore`], owned by
//! the OAuth layer, so every replica accepts every token and a code or refresh
//! token is spent once across all of them. Records are small JSON values under a
//! (kind, key) pair, each with an expiry and a `spent` mark; secrets are keyed by
//! their SHA-256 digest only (`super::secret`).
//!
//! - `sled`: the table `oauth` of the embedded database (one process);
//! - `postgres`: the table `wasmhub_oauth`, shared by every replica;
//! - `conformance`: the suite both pass.

#[cfg(test)]
pub(crate) mod conformance;
#[cfg(feature = "postgres")]
mod postgres;
mod sled;

use crate::storage::{Backend, StorageError};
use serde_json::Value;
use std::sync::Arc;

/// What a record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A registered client, by client id.
    Client,
    /// A registered client that has not completed a sign-in yet (the cap on
    /// unused registrations counts these), by client id.
    UnusedClient,
    /// A sign-in code an operator created, by digest.
    SignIn,
    /// An authorization code, by digest.
    Code,
    /// An access token, by digest.
    Access,
    /// A refresh token, by digest.
    Refresh,
    /// A revoked token family, by family id.
    RevokedFamily,
}

impl Kind {
    /// The name stored with the record.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Client => "client",
            Kind::UnusedClient => "unused_client",
            Kind::SignIn => "signin",
            Kind::Code => "code",
            Kind::Access => "access",
            Kind::Refresh => "refresh",
            Kind::RevokedFamily => "revoked_family",
        }
    }
}

/// One stored record.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Record {
    /// The record's JSON.
    pub value: Value,
    /// Unix milliseconds after which it is expired (kept a while longer, so an
    /// expired token is told from an unknown one, then purged).
    pub expires_ms: u64,
    /// Whether it was spent (a code redeemed, a refresh token rotated).
    #[serde(default)]
    pub spent: bool,
}

/// What [`GrantStore::spend`] found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Spend {
    /// The record was unspent and is spent now, by this call.
    Fresh(Record),
    /// The record was spent before (a replay).
    Replayed(Record),
    /// No such record.
    Missing,
}

/// The authorization server's records, shared by the replicas.
#[async_trait::async_trait]
pub(crate) trait GrantStore: Send + Sync {
    /// Stores `record` under (`kind`, `key`), replacing any previous one.
    async fn put(&self, kind: Kind, key: &str, record: &Record) -> Result<(), StorageError>;

    /// The record under (`kind`, `key`), expired or spent ones included.
    async fn get(&self, kind: Kind, key: &str) -> Result<Option<Record>, StorageError>;

    /// Marks the record spent, atomically: exactly one caller across replicas
    /// gets [`Spend::Fresh`] for it.
    async fn spend(&self, kind: Kind, key: &str) -> Result<Spend, StorageError>;

    /// Removes the record; whether it existed.
    async fn remove(&self, kind: Kind, key: &str) -> Result<bool, StorageError>;

    /// How many records of `kind` expire after `now_ms`.
    async fn count_live(&self, kind: Kind, now_ms: u64) -> Result<u64, StorageError>;

    /// Removes every record that expired before `before_ms`; how many.
    async fn purge(&self, before_ms: u64) -> Result<u64, StorageError>;
}

/// A store on the embedded database `storage` (tests).
#[cfg(test)]
pub(crate) fn sled_store(storage: &crate::storage::Storage) -> impl GrantStore + use<> {
    sled::SledGrants::open(storage).expect("the oauth table opens")
}

/// The store of `backend` (its table created or migrated first).
pub(crate) async fn open(backend: &Backend) -> Result<Arc<dyn GrantStore>, StorageError> {
    match backend {
        Backend::Embedded(storage) => Ok(Arc::new(sled::SledGrants::open(storage)?)),
        #[cfg(feature = "postgres")]
        Backend::Postgres(pg) => Ok(Arc::new(postgres::PgGrants::open(pg.clone()).await?)),
    }
}
