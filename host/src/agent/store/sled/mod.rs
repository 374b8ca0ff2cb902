//! The session store in sled: one session record and its UIMessages in the
//! table `chat_sessions`, leases in memory (see `lease`).
//!
//! Keys: `s/<session id>` holds the [`SessionInfo`]; `m/<session id>/<index:06>`
//! holds message number `index`; `a/<session id>/<approval id>` holds an
//! [`IssuedApproval`], the hub's record of an approval it asked the user for.
//! Session ids are client ids (`[A-Za-z0-9_-]`), so they never contain `/` and
//! one session's prefix never matches another's.
//!
//! A save is one sled transaction: it checks the stored record's version, writes
//! the record and the changed messages, and removes the messages past the end of
//! a shorter history, so the record's `message_count` always matches the stored
//! messages and a concurrent save cannot interleave. `durable` saves flush before
//! they return, so a `kill -9` loses at most the step in progress. Every sled
//! call runs on the blocking pool.

use super::lease::MemoryLeases;
use super::{Conflict, handed_over, missing_messages, next_record, written};
use super::{IssuedApproval, Lease, SaveOutcome, SaveRequest, Session, SessionInfo, SessionStore};
use crate::agent::message::UiMessage;
use crate::hub::StoredUsage;
use crate::storage::{Storage, StorageError, Table, blocking};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

const TABLE: &str = "chat_sessions";

/// The sled session store. Cheap to clone.
#[derive(Clone)]
pub(crate) struct SledSessions {
    table: Table,
    leases: Arc<MemoryLeases>,
}

fn info_key(id: &str) -> Vec<u8> {
    format!("s/{id}").into_bytes()
}

fn approval_key(id: &str, approval: &str) -> Vec<u8> {
    format!("a/{id}/{approval}").into_bytes()
}

fn message_key(id: &str, index: usize) -> Vec<u8> {
    format!("m/{id}/{index:06}").into_bytes()
}

/// Why the save transaction wrote nothing.
enum Refused {
    Conflict(Option<u64>),
    Corrupt(serde_json::Error),
}

impl SledSessions {
    /// Every session record, or only `principal`'s, in key order.
    async fn records_of(&self, principal: Option<&str>) -> Result<Vec<SessionInfo>, StorageError> {
        let (table, principal) = (self.table.clone(), principal.map(str::to_string));
        blocking(move || {
            let all = table.scan_prefix::<SessionInfo>(b"s/")?;
            Ok(all
                .into_iter()
                .map(|(_, i)| i)
                .filter(|i| principal.as_ref().is_none_or(|p| i.principal == *p))
                .collect())
        })
        .await
    }

    /// The session store in `storage`'s `chat_sessions` table.
    pub(crate) fn open(storage: &Storage) -> Result<SledSessions, StorageError> {
        Ok(SledSessions {
            table: storage.table(TABLE)?,
            leases: Arc::default(),
        })
    }

    fn load_now(table: &Table, id: &str) -> Result<Option<Session>, StorageError> {
        let Some(info) = table.get::<SessionInfo>(&info_key(id))? else {
            return Ok(None);
        };
        let prefix = format!("m/{id}/");
        let mut messages: Vec<UiMessage> = table
            .scan_prefix::<UiMessage>(prefix.as_bytes())?
            .into_iter()
            .map(|(_, m)| m)
            .collect();
        if messages.len() < info.message_count {
            return Err(missing_messages(TABLE, &info, messages.len()));
        }
        messages.truncate(info.message_count);
        Ok(Some(Session { info, messages }))
    }

    /// Writes `put` if the stored record still has version `expected`, removing
    /// the messages from `count` to the stored count.
    fn save_now(
        table: &Table,
        id: &str,
        expected: u64,
        count: usize,
        put: &[(Vec<u8>, Vec<u8>)],
    ) -> Result<Result<(), Refused>, StorageError> {
        table.write_if(
            &info_key(id),
            |current| {
                let stored: Option<SessionInfo> = match current {
                    None => None,
                    Some(bytes) => Some(serde_json::from_slice(bytes).map_err(Refused::Corrupt)?),
                };
                let version = stored.as_ref().map(|s| s.version);
                if version.unwrap_or(0) != expected {
                    return Err(Refused::Conflict(version));
                }
                let previous = stored.map_or(0, |s| s.message_count);
                Ok((count..previous).map(|i| message_key(id, i)).collect())
            },
            put,
        )
    }
}

fn encode<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, StorageError> {
    serde_json::to_vec(value).map_err(StorageError::Encode)
}

#[async_trait::async_trait]
impl SessionStore for SledSessions {
    async fn info(&self, id: &str) -> Result<Option<SessionInfo>, StorageError> {
        let (table, key) = (self.table.clone(), info_key(id));
        blocking(move || table.get(&key)).await
    }

    async fn load(&self, id: &str) -> Result<Option<Session>, StorageError> {
        let (table, id) = (self.table.clone(), id.to_string());
        blocking(move || Self::load_now(&table, &id)).await
    }

    async fn list(&self, principal: Option<&str>) -> Result<Vec<SessionInfo>, StorageError> {
        let mut all = self.records_of(principal).await?;
        all.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then_with(|| a.id.cmp(&b.id)));
        Ok(all)
    }

    async fn stored_usage(&self, principal: &str) -> Result<StoredUsage, StorageError> {
        // One process, records of a few hundred bytes: a scan of the records (not
        // the messages) is cheaper than keeping sums that every save must update.
        let mine = self.records_of(Some(principal)).await?;
        Ok(StoredUsage {
            sessions: mine.len() as u64,
            bytes: mine.iter().map(|i| i.stored_bytes).sum(),
        })
    }

    async fn hand_over(&self, id: &str, principal: &str) -> Result<Option<SessionInfo>, StorageError> {
        let (table, key, principal) = (self.table.clone(), info_key(id), principal.to_string());
        blocking(move || {
            let Some(info) = table.get::<SessionInfo>(&key)? else {
                return Ok(None);
            };
            let given = handed_over(&info, &principal);
            let put = [(key.clone(), encode(&given)?)];
            let written = table.write_if(
                &key,
                |current| match current.map(serde_json::from_slice::<SessionInfo>) {
                    Some(Ok(stored)) if stored.version == info.version => Ok(Vec::new()),
                    _ => Err(()),
                },
                &put,
            )?;
            if written.is_err() {
                // Only the lease holder writes a session, and the caller holds it.
                return Err(StorageError::Inconsistent {
                    table: TABLE.into(),
                    message: format!("session {id} changed while it was handed over", id = info.id),
                });
            }
            table.flush()?;
            Ok(Some(given))
        })
        .await
    }

    async fn save(&self, save: SaveRequest<'_>) -> Result<SaveOutcome, StorageError> {
        let info = next_record(&save);
        let mut put = Vec::with_capacity(info.message_count.saturating_sub(save.from) + 1);
        for (i, m) in written(&save) {
            put.push((message_key(&info.id, i), encode(m)?));
        }
        put.push((info_key(&info.id), encode(&info)?));
        let (table, id, expected) = (self.table.clone(), info.id.clone(), save.info.version);
        let (count, durable) = (info.message_count, save.durable);
        let done = blocking(move || {
            let done = Self::save_now(&table, &id, expected, count, &put)?;
            if done.is_ok() && durable {
                table.flush()?;
            }
            Ok(done)
        })
        .await?;
        match done {
            Ok(()) => Ok(SaveOutcome::Saved(info)),
            Err(Refused::Conflict(found)) => Ok(SaveOutcome::Conflict(Conflict {
                session_id: info.id,
                expected,
                found,
            })),
            Err(Refused::Corrupt(source)) => Err(StorageError::Corrupt {
                table: TABLE.into(),
                source,
            }),
        }
    }

    async fn issue_approvals(&self, id: &str, issued: &[IssuedApproval]) -> Result<(), StorageError> {
        let items: Vec<(Vec<u8>, IssuedApproval)> = issued
            .iter()
            .map(|a| (approval_key(id, &a.id), a.clone()))
            .collect();
        let table = self.table.clone();
        blocking(move || table.put_many(&items)).await
    }

    async fn issued_approval(
        &self,
        id: &str,
        approval: &str,
    ) -> Result<Option<IssuedApproval>, StorageError> {
        // Ids come from clients: one with a `/` could reach another session's key.
        if approval.contains('/') {
            return Ok(None);
        }
        let (table, key) = (self.table.clone(), approval_key(id, approval));
        blocking(move || table.get(&key)).await
    }

    async fn delete(&self, id: &str) -> Result<bool, StorageError> {
        let (table, id) = (self.table.clone(), id.to_string());
        blocking(move || {
            let existed = table.remove(&info_key(&id))?;
            table.remove_prefix(format!("m/{id}/").as_bytes())?;
            table.remove_prefix(format!("a/{id}/").as_bytes())?;
            table.flush()?;
            Ok(existed)
        })
        .await
    }

    async fn acquire(&self, id: &str, owner: &str, ttl: Duration) -> Result<Lease, StorageError> {
        Ok(self.leases.acquire(id, owner, ttl))
    }

    async fn renew(&self, id: &str, owner: &str, ttl: Duration) -> Result<bool, StorageError> {
        Ok(self.leases.renew(id, owner, ttl))
    }

    async fn release(&self, id: &str, owner: &str) -> Result<(), StorageError> {
        self.leases.release(id, owner);
        Ok(())
    }

    async fn leased(&self) -> Result<HashSet<String>, StorageError> {
        Ok(self.leases.leased())
    }
}

#[cfg(test)]
mod tests;
