//! CPU shares per tenant (the token a call runs under). Instance slots bound how
//! many calls one token may have open; this bounds how much CPU its busy ones may
//! burn. Every epoch tick, each tenant gets `limits.caller_share_percent` of the
//! async worker threads (at least one) in tickets; a call still running at a tick
//! (past its first whole tick) spends one to run on to the next, and waits, in FIFO
//! order, when its tenant has none left; a new call of a tenant with none left
//! queues the same way before it starts. So one token's spinning calls share their
//! part of the CPU while every other token's calls find workers free. Short calls
//! of a tenant within its share, done within their first tick, never wait; a call
//! blocked in a host call (a nested call, an HTTP response) passes no ticks and
//! holds nothing.
//!
//! Each tenant also has that many permits for large schema validations on the
//! blocking pool (`hub::checks`), the other CPU-heavy work a client can cause
//! before a plugin runs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Every tenant's tickets and validation permits.
pub struct CpuShares {
    per_tenant: usize,
    tenants: Mutex<HashMap<Arc<str>, Tenant>>,
}

/// One tenant's share.
#[derive(Clone)]
struct Tenant {
    /// Ticks its busy calls may still run this tick (topped up every tick).
    ticks: Arc<Semaphore>,
    /// Large validations it may run at once on the blocking pool.
    validations: Arc<Semaphore>,
}

impl CpuShares {
    /// `share_percent` of `workers` per tenant, at least one.
    pub(super) fn new(workers: usize, share_percent: u32) -> CpuShares {
        let per_tenant = (workers * share_percent as usize / 100).max(1);
        CpuShares {
            per_tenant,
            tenants: Mutex::new(HashMap::new()),
        }
    }

    /// How many workers' worth one tenant gets.
    pub fn per_tenant(&self) -> usize {
        self.per_tenant
    }

    /// `tenant`'s share (tenants are the configured tokens and a few internal
    /// names, so the map stays small).
    fn of(&self, tenant: &Arc<str>) -> Tenant {
        let mut tenants = self.tenants.lock().unwrap_or_else(|e| e.into_inner());
        tenants
            .entry(tenant.clone())
            .or_insert_with(|| Tenant {
                ticks: Arc::new(Semaphore::new(self.per_tenant)),
                validations: Arc::new(Semaphore::new(self.per_tenant)),
            })
            .clone()
    }

    /// The ticket gate of `tenant`, for one call's epoch callback.
    pub(super) fn gate(&self, tenant: &Arc<str>) -> TickGate {
        TickGate {
            ticks: self.of(tenant).ticks,
        }
    }

    /// Waits for one of `tenant`'s validation permits; given back when dropped.
    pub async fn validation(&self, tenant: &Arc<str>) -> OwnedSemaphorePermit {
        let permits = self.of(tenant).validations;
        permits
            .acquire_owned()
            .await
            .expect("validation permits are never closed")
    }

    /// Called by the epoch ticker every tick: each tenant's tickets back to full.
    pub(super) fn refill(&self) {
        let tenants = self.tenants.lock().unwrap_or_else(|e| e.into_inner());
        for tenant in tenants.values() {
            let missing = self.per_tenant.saturating_sub(tenant.ticks.available_permits());
            if missing > 0 {
                tenant.ticks.add_permits(missing);
            }
        }
    }
}

/// One call's way past an epoch tick.
#[derive(Clone)]
pub(super) struct TickGate {
    ticks: Arc<Semaphore>,
}

impl TickGate {
    /// Before a call starts: free while its tenant has tickets left this tick;
    /// when its busy calls have spent them, the new call queues behind them like
    /// a busy one (else a wave of new calls would each run a free first tick).
    pub(super) async fn enter(&self) {
        if self.ticks.available_permits() == 0 {
            self.clone().pass().await;
        }
    }

    /// At a tick: spends one of the tenant's tickets if one is left (`true`: the
    /// call then yields the ordinary way), else `false`.
    pub(super) fn try_pass(&self) -> bool {
        match self.ticks.try_acquire() {
            Ok(ticket) => {
                ticket.forget();
                true
            }
            Err(_) => false,
        }
    }

    /// Waits for the next refill of the tenant's tickets and spends one (the
    /// tenant's other busy calls go first).
    pub(super) async fn pass(self) {
        self.ticks
            .acquire()
            .await
            .expect("tickets are never closed")
            .forget();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_gets_its_share_of_the_workers_and_at_least_one() {
        assert_eq!(CpuShares::new(2, 50).per_tenant(), 1);
        assert_eq!(CpuShares::new(8, 50).per_tenant(), 4);
        assert_eq!(CpuShares::new(1, 10).per_tenant(), 1);
        assert_eq!(CpuShares::new(4, 100).per_tenant(), 4);
    }

    #[tokio::test]
    async fn busy_calls_of_one_tenant_wait_for_the_next_tick_and_others_do_not() {
        let shares = CpuShares::new(2, 50);
        let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        shares.gate(&a).pass().await;
        // `a`'s ticket for this tick is spent: its next busy call waits...
        let waiting = tokio::spawn(shares.gate(&a).pass());
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        // ...while `b` passes at once, and may validate.
        shares.gate(&b).pass().await;
        let _permit = shares.validation(&b).await;
        // The next tick tops `a` up: the waiting call runs on.
        shares.refill();
        waiting.await.unwrap();
        // A new call enters freely while tickets are left, and queues once they are spent.
        shares.refill();
        shares.gate(&a).enter().await;
        assert_eq!(
            shares.of(&a).ticks.available_permits(),
            1,
            "entering spends nothing"
        );
        shares.gate(&a).pass().await;
        let entering = tokio::spawn({
            let gate = shares.gate(&a);
            async move { gate.enter().await }
        });
        tokio::task::yield_now().await;
        assert!(!entering.is_finished());
        shares.refill();
        entering.await.unwrap();
        // At a tick, a ticket left is spent at once; none left, the call must wait.
        shares.refill();
        assert!(shares.gate(&a).try_pass());
        assert!(!shares.gate(&a).try_pass());
        // A refill never gives more than the share.
        shares.refill();
        shares.refill();
        assert_eq!(shares.of(&a).ticks.available_permits(), 1);
    }
}
