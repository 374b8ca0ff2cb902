//! The embedded backend's audit store: the record log `calls`
//! (`<data_dir>/logs/calls/`, `storage::log`; in memory for a temporary
//! database), where the sled table `calls` that earlier versions wrote is moved
//! on first open.
//!
//! sled allows one process per database, and the log beside it follows: every
//! store over one database shares its one log of `CallRecord`s (`Storage::log`),
//! and appends are serialized by the lock on it. The work runs inline: the store is driven by the
//! audit writer thread, never by an async worker.

use super::AuditStore;
use crate::hub::audit::CallRecord;
use crate::hub::records::RecordStore;
use crate::storage::log::{LogRecord, RecordLog};
use crate::storage::{SharedLog, Storage, StorageError};
use std::sync::MutexGuard;

impl LogRecord for CallRecord {
    const LOG_NAME: &'static str = "calls";
}

/// The audit log in segment files.
pub(crate) struct LogAudit {
    log: SharedLog<CallRecord>,
}

impl LogAudit {
    /// The store of `storage`'s log `calls`.
    pub(crate) fn open(storage: &Storage) -> Result<LogAudit, StorageError> {
        Ok(LogAudit { log: storage.log()? })
    }

    fn log(&self) -> MutexGuard<'_, RecordLog<CallRecord>> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait::async_trait]
impl RecordStore for LogAudit {
    type Record = CallRecord;

    async fn append(&self, batch: Vec<CallRecord>) -> Result<Vec<CallRecord>, StorageError> {
        self.log().append(&batch, crate::clock::now_ms())?;
        Ok(batch)
    }

    async fn trim(&self, keep: usize, slack: usize) -> Result<(), StorageError> {
        self.log().trim(keep, slack)
    }
}

#[async_trait::async_trait]
impl AuditStore for LogAudit {
    async fn recent(&self, limit: usize, principal: Option<String>) -> Result<Vec<CallRecord>, StorageError> {
        match principal {
            None => self.log().newest(limit),
            Some(p) => self.log().newest_where(limit, |r| r.caller == p),
        }
    }
}
