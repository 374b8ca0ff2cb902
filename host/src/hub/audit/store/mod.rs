//! Where the audit log's records live: [`AuditStore`], owned by the hub and
//! written only through the audit log's writer thread (`hub::records`).
//!
//! - `log`: the record log `calls` of the embedded backend (one process);
//! - `postgres`: the table `wasmhub_audit`, shared by every replica;
//! - `conformance`: the suite every implementation passes.

#[cfg(test)]
pub(crate) mod conformance;
mod log;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;

pub(crate) use self::log::LogAudit;

use super::CallRecord;
use crate::hub::records::RecordStore;
use crate::storage::{Backend, StorageError};
use std::sync::Arc;

/// The audit store of `backend`, its schema migrated when it has one.
pub(crate) async fn open(backend: &Backend) -> Result<Arc<dyn AuditStore>, StorageError> {
    match backend {
        Backend::Embedded(storage) => Ok(Arc::new(LogAudit::open(storage)?)),
        #[cfg(feature = "postgres")]
        Backend::Postgres(pg) => Ok(Arc::new(postgres::PgAudit::open(pg.clone()).await?)),
    }
}

/// The audit log's storage: call records appended and trimmed by the pipeline
/// ([`RecordStore`]), read newest first. Several writers (replicas) may share
/// one store: ids and positions never collide, every writer's records are read
/// and trimmed.
#[async_trait::async_trait]
pub(crate) trait AuditStore: RecordStore<Record = CallRecord> {
    /// The newest `limit` records of every writer, newest first; only those whose
    /// `caller` is `principal` when one is given.
    async fn recent(&self, limit: usize, principal: Option<String>) -> Result<Vec<CallRecord>, StorageError>;
}
