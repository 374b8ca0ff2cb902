//! The embedded backend's accounting store: records in the record log
//! `accounting` (`<data_dir>/logs/accounting/`, `storage::log`, where the sled
//! table `accounting` that earlier versions wrote is moved on first open; in
//! memory for a temporary database), ids from the log's counter continued from
//! the newest stored record, and each session's sums in the sled table
//! `accounting_sessions`.
//!
//! sled allows one process per database, and the log beside it follows: every
//! store over one database shares its one log of `AccountingRecord`s and so its
//! id counter (`Storage::log`), and appends are serialized by the lock on it. The work runs inline: the store
//! is driven by the accounting writer thread.

use super::AccountingStore;
use crate::hub::accounting::{AccountingRecord, Page, SessionUsage, Since};
use crate::hub::records::RecordStore;
use crate::storage::log::{LogRecord, RecordLog};
use crate::storage::{SharedLog, Storage, StorageError, Table};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::MutexGuard;

impl LogRecord for AccountingRecord {
    const LOG_NAME: &'static str = "accounting";

    fn log_id(&self) -> u64 {
        self.id
    }
}

/// Accounting in a record log and a sled table.
pub(crate) struct LogAccounting {
    sessions: Table,
    log: SharedLog<AccountingRecord>,
}

impl LogAccounting {
    /// The store of `storage`'s log `accounting` and table `accounting_sessions`.
    pub(crate) fn open(storage: &Storage) -> Result<LogAccounting, StorageError> {
        Ok(LogAccounting {
            sessions: storage.table("accounting_sessions")?,
            log: storage.log()?,
        })
    }

    fn log(&self) -> MutexGuard<'_, RecordLog<AccountingRecord>> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait::async_trait]
impl RecordStore for LogAccounting {
    type Record = AccountingRecord;

    async fn append(&self, mut batch: Vec<AccountingRecord>) -> Result<Vec<AccountingRecord>, StorageError> {
        if batch.is_empty() {
            return Ok(batch);
        }
        let mut log = self.log();
        for (r, id) in batch.iter_mut().zip(log.next_id()..) {
            r.id = id;
        }
        log.append(&batch, crate::clock::now_ms())?;
        add_to_sessions(&self.sessions, &batch)?;
        Ok(batch)
    }

    async fn trim(&self, keep: usize, slack: usize) -> Result<(), StorageError> {
        self.log().trim(keep, slack)
    }
}

#[async_trait::async_trait]
impl AccountingStore for LogAccounting {
    async fn page(
        &self,
        since: Since,
        limit: usize,
        principal: Option<String>,
    ) -> Result<Page, StorageError> {
        let log = self.log();
        let segments = log.segments();
        // Segments are in id and time order; each knows its newest id and when
        // it was last written (after its records ended).
        let first = match since {
            Since::Start => 0,
            Since::Time(ms) => segments.partition_point(|s| s.last_ms < ms),
            Since::Id(id) => segments.partition_point(|s| s.last_id <= id),
        };
        let after = |r: &AccountingRecord| match since {
            Since::Start => true,
            Since::Id(id) => r.id > id,
            Since::Time(ms) => r.time_ms >= ms,
        };
        let wanted = |r: &AccountingRecord| after(r) && principal.as_ref().is_none_or(|p| r.caller == *p);
        let mut records = Vec::with_capacity(limit.min(1024));
        for segment in segments.range(first..) {
            if records.len() >= limit {
                break;
            }
            let visited = log.visit(segment, |record| {
                if wanted(&record) {
                    records.push(record);
                }
                if records.len() >= limit {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })?;
            if visited.is_break() {
                break;
            }
        }
        let next = match (records.last(), since) {
            (Some(last), _) => last.id,
            (None, Since::Id(id)) => id,
            (None, _) => log.last_id().unwrap_or(0),
        };
        Ok(Page { records, next })
    }

    async fn session_usage(&self, sessions: Vec<String>) -> Result<Vec<SessionUsage>, StorageError> {
        sessions
            .iter()
            .map(|id| Ok(self.sessions.get(id.as_bytes())?.unwrap_or_default()))
            .collect()
    }

    async fn forget_session(&self, session: String) -> Result<(), StorageError> {
        // Under the log's lock: no append adds to the sums while they go.
        let _log = self.log();
        self.sessions.remove(session.as_bytes())?;
        Ok(())
    }
}

impl Drop for LogAccounting {
    fn drop(&mut self) {
        // The last writer is gone: make the sums it wrote durable.
        let _ = self.sessions.flush();
    }
}

fn add_to_sessions(sessions: &Table, batch: &[AccountingRecord]) -> Result<(), StorageError> {
    let mut sums: BTreeMap<&str, SessionUsage> = BTreeMap::new();
    for record in batch {
        let Some(session) = record.session.as_deref() else {
            continue;
        };
        if !sums.contains_key(session) {
            let stored = sessions
                .get::<SessionUsage>(session.as_bytes())?
                .unwrap_or_default();
            sums.insert(session, stored);
        }
        sums.get_mut(session).expect("inserted above").add(&record.entry);
    }
    let items: Vec<(Vec<u8>, SessionUsage)> = sums
        .into_iter()
        .map(|(s, u)| (s.as_bytes().to_vec(), u))
        .collect();
    sessions.put_many(&items)
}
