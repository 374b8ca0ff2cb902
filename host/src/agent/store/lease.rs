//! Leases kept in this process's memory, for the sled store: sled locks its
//! database to one process, so no other process can hold one of its sessions'
//! leases, and a lease must die with the process that held it (after a crash
//! and restart every session is free at once, as before leases existed).

use super::Lease;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

/// Session id -> (owner, expiry in Unix milliseconds).
#[derive(Default)]
pub(super) struct MemoryLeases {
    held: Mutex<HashMap<String, (String, u64)>>,
}

fn expiry(ttl: Duration) -> u64 {
    crate::clock::now_ms().saturating_add(ttl.as_millis() as u64)
}

impl MemoryLeases {
    pub(super) fn acquire(&self, id: &str, owner: &str, ttl: Duration) -> Lease {
        let mut held = self.held.lock().expect("lease table lock");
        let now = crate::clock::now_ms();
        if let Some((holder, expires_ms)) = held.get(id)
            && *expires_ms > now
        {
            return Lease::HeldBy {
                owner: holder.clone(),
                expires_ms: *expires_ms,
            };
        }
        let expires_ms = expiry(ttl);
        held.insert(id.to_string(), (owner.to_string(), expires_ms));
        Lease::Acquired { expires_ms }
    }

    pub(super) fn renew(&self, id: &str, owner: &str, ttl: Duration) -> bool {
        let mut held = self.held.lock().expect("lease table lock");
        match held.get_mut(id) {
            Some((holder, expires_ms)) if holder == owner => {
                *expires_ms = expiry(ttl);
                true
            }
            _ => false,
        }
    }

    pub(super) fn release(&self, id: &str, owner: &str) {
        let mut held = self.held.lock().expect("lease table lock");
        if held.get(id).is_some_and(|(holder, _)| holder == owner) {
            held.remove(id);
        }
    }

    pub(super) fn leased(&self) -> HashSet<String> {
        let now = crate::clock::now_ms();
        let mut held = self.held.lock().expect("lease table lock");
        held.retain(|_, (_, expires_ms)| *expires_ms > now);
        held.keys().cloned().collect()
    }
}
