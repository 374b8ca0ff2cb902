//! The sled accounting store: records in the table `accounting`, one block per
//! appended batch (`storage::blocks`), ids from one counter continued from the
//! newest stored record, and each session's sums in `accounting_sessions` (the
//! layouts every version wrote, so existing data directories keep working).
//!
//! sled allows one process per database, so one store instance is the only
//! writer; concurrent appends through it are serialized by the lock on its state.
//! The work runs inline: the store is driven by the accounting writer thread.

use super::UsageStore;
use crate::hub::accounting::{Page, SessionUsage, Since, UsageRecord};
use crate::storage::blocks::{BlockKey, Blocks, Stored};
use crate::storage::{StorageError, Table};
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// The block list and the next id, read from the table on first use.
struct State {
    blocks: Blocks,
    next_id: u64,
}

/// Accounting in two sled tables.
pub(crate) struct SledUsage {
    records: Table,
    sessions: Table,
    state: Mutex<Option<State>>,
}

impl SledUsage {
    /// The store over `records` (`accounting`) and `sessions` (`accounting_sessions`).
    pub(crate) fn new(records: Table, sessions: Table) -> SledUsage {
        SledUsage {
            records,
            sessions,
            state: Mutex::new(None),
        }
    }

    fn state(&self) -> MutexGuard<'_, Option<State>> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.is_none() {
            let blocks = Blocks::load(&self.records).unwrap_or_else(|e| {
                crate::error!("accounting: cannot read the stored blocks ({e}); counting from zero");
                Blocks::default()
            });
            let next_id = last_id(&self.records).map_or(1, |id| id + 1);
            *state = Some(State { blocks, next_id });
        }
        state
    }

    /// The records of block `key`.
    fn block(&self, key: &[u8]) -> Result<Vec<UsageRecord>, StorageError> {
        let stored = self.records.get::<Stored<UsageRecord>>(key)?;
        Ok(stored.map(Stored::into_records).unwrap_or_default())
    }

    /// The index of the first block that may hold a record after `since`.
    fn first_block(&self, keys: &[(Vec<u8>, BlockKey)], since: Since) -> Result<usize, StorageError> {
        Ok(match since {
            Since::Start => 0,
            // Blocks are written in time order after their records ended.
            Since::Time(ms) => keys.partition_point(|(_, k)| k.ms < ms),
            Since::Id(id) => {
                let (mut lo, mut hi) = (0, keys.len());
                while lo < hi {
                    let mid = (lo + hi) / 2;
                    if self.block(&keys[mid].0)?.last().is_some_and(|r| r.id <= id) {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                lo
            }
        })
    }
}

#[async_trait::async_trait]
impl UsageStore for SledUsage {
    async fn append(&self, mut batch: Vec<UsageRecord>) -> Result<Vec<UsageRecord>, StorageError> {
        if batch.is_empty() {
            return Ok(batch);
        }
        let mut guard = self.state();
        let state = guard.as_mut().expect("loaded by state()");
        for r in &mut batch {
            r.id = state.next_id;
            state.next_id += 1;
        }
        let key = state.blocks.next_key(crate::clock::now_ms(), batch.len());
        self.records.put(&key.encode(), &batch)?;
        state.blocks.stored_block(key);
        add_to_sessions(&self.sessions, &batch)?;
        Ok(batch)
    }

    async fn page(&self, since: Since, limit: usize) -> Result<Page, StorageError> {
        let keys: Vec<(Vec<u8>, BlockKey)> = self
            .records
            .keys()?
            .into_iter()
            .filter_map(|raw| BlockKey::decode(&raw).map(|k| (raw, k)))
            .collect();
        let wanted = |r: &UsageRecord| match since {
            Since::Start => true,
            Since::Id(id) => r.id > id,
            Since::Time(ms) => r.time_ms >= ms,
        };
        let mut records = Vec::with_capacity(limit.min(1024));
        for (raw, _) in &keys[self.first_block(&keys, since)?..] {
            if records.len() >= limit {
                break;
            }
            records.extend(
                self.block(raw)?
                    .into_iter()
                    .filter(wanted)
                    .take(limit - records.len()),
            );
        }
        let next = match (records.last(), since) {
            (Some(last), _) => last.id,
            (None, Since::Id(id)) => id,
            (None, _) => match keys.last() {
                Some((raw, _)) => self.block(raw)?.last().map_or(0, |r| r.id),
                None => 0,
            },
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
        // Under the state lock: no append adds to the sums while they go.
        let _state = self.state();
        self.sessions.remove(session.as_bytes())?;
        Ok(())
    }

    async fn trim(&self, keep: usize, slack: usize) -> Result<(), StorageError> {
        let mut guard = self.state();
        let blocks = &mut guard.as_mut().expect("loaded by state()").blocks;
        let over = blocks.records > keep.saturating_add(slack) || (keep == 0 && blocks.records > 0);
        if over {
            blocks.trim::<UsageRecord>(&self.records, keep)?;
        }
        Ok(())
    }
}

impl Drop for SledUsage {
    fn drop(&mut self) {
        // The last writer is gone: make what it wrote durable.
        let _ = self.records.flush();
    }
}

fn add_to_sessions(sessions: &Table, batch: &[UsageRecord]) -> Result<(), StorageError> {
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

/// The id of the newest stored record.
fn last_id(records: &Table) -> Option<u64> {
    let (_, newest) = records.newest_first::<Stored<UsageRecord>>().next()?.ok()?;
    newest.into_records().last().map(|r| r.id)
}
