//! The sessions of one process in a bounded map (the embedded backend: sled allows
//! one process per database, so there is no other replica to share them with). The
//! `requestState` key is drawn at random per process: a restart forgets it along
//! with the sessions, and a client whose state is refused starts the call over.

use super::SessionLimits;
use super::{McpSessionStore, StoredSession};
use crate::storage::StorageError;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

struct Entry {
    session: StoredSession,
    last_used: Instant,
}

/// Sessions in this process's memory.
pub(crate) struct MemorySessions {
    limits: SessionLimits,
    map: Mutex<HashMap<String, Entry>>,
    key: Vec<u8>,
}

impl MemorySessions {
    /// An empty table with `limits`.
    pub(crate) fn new(limits: SessionLimits) -> MemorySessions {
        let mut key = vec![0u8; 32];
        getrandom::fill(&mut key).expect("the system random generator works");
        MemorySessions {
            limits,
            map: Mutex::new(HashMap::new()),
            key,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        // Every update is a single insert/remove: a poisoned map is consistent.
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// [`McpSessionStore::open`] at time `now`.
    pub(crate) fn open_at(&self, id: &str, session: StoredSession, now: Instant) -> Vec<String> {
        let mut map = self.lock();
        let ttl = self.limits.idle_ttl;
        let mut removed: Vec<String> = map
            .iter()
            .filter(|(_, e)| now.duration_since(e.last_used) >= ttl)
            .map(|(k, _)| k.clone())
            .collect();
        for k in &removed {
            map.remove(k);
        }
        while map.len() >= self.limits.max_sessions.max(1) {
            let Some(oldest) = map
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            map.remove(&oldest);
            removed.push(oldest);
        }
        map.insert(
            id.to_string(),
            Entry {
                session,
                last_used: now,
            },
        );
        removed
    }

    /// [`McpSessionStore::touch`] at time `now`.
    pub(crate) fn touch_at(&self, id: &str, caller: &str, now: Instant) -> Option<StoredSession> {
        let mut map = self.lock();
        let entry = map.get_mut(id).filter(|e| e.session.caller == caller)?;
        if now.duration_since(entry.last_used) >= self.limits.idle_ttl {
            map.remove(id);
            return None;
        }
        entry.last_used = now;
        Some(entry.session.clone())
    }

    /// Sessions stored (expired ones not yet swept included).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

#[async_trait::async_trait]
impl McpSessionStore for MemorySessions {
    async fn open(&self, id: &str, session: StoredSession) -> Result<Vec<String>, StorageError> {
        Ok(self.open_at(id, session, Instant::now()))
    }

    async fn touch(&self, id: &str, caller: &str) -> Result<Option<StoredSession>, StorageError> {
        Ok(self.touch_at(id, caller, Instant::now()))
    }

    async fn close(&self, id: &str, caller: &str) -> Result<bool, StorageError> {
        let mut map = self.lock();
        if map.get(id).is_none_or(|e| e.session.caller != caller) {
            return Ok(false);
        }
        Ok(map.remove(id).is_some())
    }

    async fn state_key(&self) -> Result<Vec<u8>, StorageError> {
        Ok(self.key.clone())
    }
}
