//! The sled audit store: the table `calls`, one block of records per appended
//! batch (`storage::blocks`, the layout every version wrote, so existing data
//! directories keep working).
//!
//! sled allows one process per database, so one store instance is the only
//! writer; concurrent appends through it are serialized by the lock on its block
//! list, which is where block keys come from. The work runs inline: the store is
//! driven by the audit writer thread, never by an async worker.

use super::AuditStore;
use crate::hub::audit::CallRecord;
use crate::storage::blocks::{Blocks, Stored};
use crate::storage::{StorageError, Table};
use std::sync::{Mutex, MutexGuard};

/// The audit log in a sled table.
pub(crate) struct SledAudit {
    table: Table,
    /// Every stored block, read from the table on first use.
    blocks: Mutex<Option<Blocks>>,
}

impl SledAudit {
    /// The store over `table` (`calls`).
    pub(crate) fn new(table: Table) -> SledAudit {
        SledAudit {
            table,
            blocks: Mutex::new(None),
        }
    }

    /// The block list, read from the table the first time.
    fn blocks(&self) -> MutexGuard<'_, Option<Blocks>> {
        let mut blocks = self.blocks.lock().unwrap_or_else(|p| p.into_inner());
        if blocks.is_none() {
            *blocks = Some(Blocks::load(&self.table).unwrap_or_else(|e| {
                crate::error!("audit log: cannot read the stored blocks ({e}); counting from zero");
                Blocks::default()
            }));
        }
        blocks
    }
}

#[async_trait::async_trait]
impl AuditStore for SledAudit {
    async fn append(&self, batch: Vec<CallRecord>) -> Result<(), StorageError> {
        if batch.is_empty() {
            return Ok(());
        }
        let mut guard = self.blocks();
        let blocks = guard.as_mut().expect("loaded by blocks()");
        let key = blocks.next_key(crate::clock::now_ms(), batch.len());
        self.table.put(&key.encode(), &batch)?;
        blocks.stored_block(key);
        Ok(())
    }

    async fn recent(&self, limit: usize) -> Result<Vec<CallRecord>, StorageError> {
        let mut out = Vec::with_capacity(limit.min(1024));
        for item in self.table.newest_first::<Stored<CallRecord>>() {
            if out.len() >= limit {
                break;
            }
            let (_, stored) = item?;
            out.extend(stored.into_records().into_iter().rev().take(limit - out.len()));
        }
        Ok(out)
    }

    async fn trim(&self, keep: usize, slack: usize) -> Result<(), StorageError> {
        let mut guard = self.blocks();
        let blocks = guard.as_mut().expect("loaded by blocks()");
        let over = blocks.records > keep.saturating_add(slack) || (keep == 0 && blocks.records > 0);
        if over {
            blocks.trim::<CallRecord>(&self.table, keep)?;
        }
        Ok(())
    }
}

impl Drop for SledAudit {
    fn drop(&mut self) {
        // The last writer is gone: make what it wrote durable.
        let _ = self.table.flush();
    }
}
