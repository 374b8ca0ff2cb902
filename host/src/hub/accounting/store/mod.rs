//! Where accounting records and each session's sums live: [`AccountingStore`], owned
//! by the hub and driven only by accounting's writer thread (`hub::records`,
//! `super::kind`).
//! The JSONL file is not here: it stays a local file of each process.
//!
//! - `log`: the record log `accounting` and the sled table
//!   `accounting_sessions` (one process);
//! - `postgres`: the tables `wasmhub_accounting` and
//!   `wasmhub_accounting_sessions`, shared by every replica;
//! - `conformance`: the suite every implementation passes.

#[cfg(test)]
pub(crate) mod conformance;
mod log;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;

pub(crate) use self::log::LogAccounting;

use super::{AccountingRecord, Page, SessionUsage, Since};
use crate::hub::records::RecordStore;
use crate::storage::{Backend, StorageError};
use std::sync::Arc;

/// The accounting store of `backend`, its schema migrated when it has one.
pub(crate) async fn open(backend: &Backend) -> Result<Arc<dyn AccountingStore>, StorageError> {
    match backend {
        Backend::Embedded(storage) => Ok(Arc::new(LogAccounting::open(storage)?)),
        #[cfg(feature = "postgres")]
        Backend::Postgres(pg) => Ok(Arc::new(postgres::PgAccounting::open(pg.clone()).await?)),
    }
}

/// Accounting's storage: records appended by the pipeline ([`RecordStore`]:
/// `append` gives each record its id, after every id given before by any writer,
/// in batch order, and adds it to its session's sums; `trim` keeps the sums),
/// read by page and by session sums. Several writers (replicas) may share one
/// store: record ids are unique and increasing across all of them, sums add up
/// every writer's records, trimming counts every writer's records.
#[async_trait::async_trait]
pub(crate) trait AccountingStore: RecordStore<Record = AccountingRecord> {
    /// Up to `limit` records after `since`, oldest first (in id order); only those
    /// whose `caller` is `principal` when one is given.
    async fn page(&self, since: Since, limit: usize, principal: Option<String>)
    -> Result<Page, StorageError>;

    /// The sums of each of `sessions`, in order (zero for one without records).
    async fn session_usage(&self, sessions: Vec<String>) -> Result<Vec<SessionUsage>, StorageError>;

    /// Drops the sums of `session` (the session was deleted; its records stay).
    async fn forget_session(&self, session: String) -> Result<(), StorageError>;
}
