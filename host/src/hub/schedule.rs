//! Fair shares of the instance pool: every call (nested ones included) takes a slot
//! of its caller's share, of its plugin's share and of the pool before it runs, so
//! one plugin or one token cannot hold every slot while the others fail.
//!
//! A share is a percentage of `limits.max_instances` (`limits.plugin_share_percent`,
//! `limits.caller_share_percent`). A call over a share, or finding the pool full,
//! waits for a slot for at most `limits.queue_ms` (never past its deadline), then
//! fails with `call_limit` naming the bound it waited on. Shares are kept per plugin
//! namespace and per token name: both sets are bounded by the configuration and the
//! plugins folder.

use super::error::{CallError, Limit};
use crate::config::ShareLimits;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// Slots of the pool and of each share.
pub(crate) struct Scheduler {
    queue: Duration,
    pool: Arc<Semaphore>,
    pool_size: u32,
    /// Slots of one plugin's share, and the configured percentage they come from.
    plugin_cap: (u32, u32),
    /// Slots of one token's share, and the configured percentage.
    caller_cap: (u32, u32),
    plugins: Mutex<HashMap<String, Arc<Semaphore>>>,
    callers: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// The slots a running call holds; dropping it frees them.
pub(crate) struct Slot {
    _held: [OwnedSemaphorePermit; 3],
}

impl Scheduler {
    /// Shares of a pool of `pool_size` slots (`limits.max_instances`).
    pub(super) fn new(pool_size: u32, shares: &ShareLimits) -> Scheduler {
        let pool_size = pool_size.max(1);
        let share = |percent: u32| {
            let percent = percent.clamp(1, 100);
            let slots = (u64::from(pool_size) * u64::from(percent)).div_ceil(100) as u32;
            (slots, percent)
        };
        Scheduler {
            queue: Duration::from_millis(shares.queue_ms),
            pool: Arc::new(Semaphore::new(pool_size as usize)),
            pool_size,
            plugin_cap: share(shares.plugin_percent),
            caller_cap: share(shares.caller_percent),
            plugins: Mutex::default(),
            callers: Mutex::default(),
        }
    }

    /// Waits (boundedly, never past `deadline`) for a slot of `caller`'s share, of
    /// `plugin`'s share and of the pool, in that order.
    pub(super) async fn admit(
        &self,
        plugin: &str,
        caller: &str,
        deadline: Instant,
    ) -> Result<Slot, CallError> {
        let until = deadline.min(Instant::now() + self.queue);
        let caller_slot = self
            .acquire(share(&self.callers, caller, self.caller_cap.0), until)
            .await
            .ok_or_else(|| self.refused(Limit::CallerShare, caller))?;
        let plugin_slot = self
            .acquire(share(&self.plugins, plugin, self.plugin_cap.0), until)
            .await
            .ok_or_else(|| self.refused(Limit::PluginShare, plugin))?;
        let pool_slot = self
            .acquire(self.pool.clone(), until)
            .await
            .ok_or_else(|| self.refused(Limit::Instances, plugin))?;
        Ok(Slot {
            _held: [caller_slot, plugin_slot, pool_slot],
        })
    }

    async fn acquire(&self, slots: Arc<Semaphore>, until: Instant) -> Option<OwnedSemaphorePermit> {
        match tokio::time::timeout_at(until, slots.acquire_owned()).await {
            Ok(permit) => permit.ok(),
            Err(_elapsed) => None,
        }
    }

    /// The error of a call that waited its time for a slot of `limit` (`who` is
    /// the token or plugin whose share was full).
    fn refused(&self, limit: Limit, who: &str) -> CallError {
        let waited = self.queue.as_millis();
        let share = match limit {
            Limit::CallerShare => Some(("token", self.caller_cap)),
            Limit::PluginShare => Some(("plugin", self.plugin_cap)),
            _ => None,
        };
        let message = match share {
            Some((kind, (cap, percent))) => format!(
                "the {kind} {who:?} already runs {cap} calls at once, its share of the instance pool ({} = {percent}% of {} slots); waited up to {waited} ms (limits.queue_ms) for one to finish; retry shortly",
                limit.key(),
                self.pool_size
            ),
            None => format!(
                "all {} plugin instance slots ({}) are busy; waited up to {waited} ms (limits.queue_ms) for one; retry shortly",
                self.pool_size,
                limit.key()
            ),
        };
        CallError::limit(limit, message)
    }
}

/// The slots of `name`'s share, made on first use.
fn share(shares: &Mutex<HashMap<String, Arc<Semaphore>>>, name: &str, cap: u32) -> Arc<Semaphore> {
    let mut shares = shares.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(slots) = shares.get(name) {
        return slots.clone();
    }
    let slots = Arc::new(Semaphore::new(cap as usize));
    shares.insert(name.to_string(), slots.clone());
    slots
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scheduler(plugin_share: u32, caller_share: u32) -> Scheduler {
        Scheduler::new(
            4,
            &ShareLimits {
                plugin_percent: plugin_share,
                caller_percent: caller_share,
                queue_ms: 100,
            },
        )
    }

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    #[tokio::test(start_paused = true)]
    async fn one_plugin_cannot_take_the_pool_from_the_others() {
        let s = scheduler(50, 100);
        let held = [
            s.admit("a", "ci", far()).await.unwrap(),
            s.admit("a", "ci", far()).await.unwrap(),
        ];
        let e = s.admit("a", "ci", far()).await.err().unwrap();
        assert_eq!(e.limit, Some(Limit::PluginShare));
        assert!(
            e.message.contains("\"a\" already runs 2 calls")
                && e.message.contains("limits.plugin_share_percent = 50% of 4"),
            "{}",
            e.message
        );
        // The rest of the pool is the other plugins'.
        let _b = [
            s.admit("b", "web", far()).await.unwrap(),
            s.admit("b", "web", far()).await.unwrap(),
        ];
        // Past the shares, the pool itself is the bound.
        let e = s.admit("c", "cron", far()).await.err().unwrap();
        assert_eq!(e.limit, Some(Limit::Instances));
        drop(held);
        s.admit("c", "cron", far()).await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn one_token_cannot_take_the_pool_from_the_others() {
        let s = scheduler(100, 25);
        let _held = s.admit("a", "ci", far()).await.unwrap();
        let e = s.admit("b", "ci", far()).await.err().unwrap();
        assert_eq!(e.limit, Some(Limit::CallerShare));
        assert!(e.message.contains("token \"ci\""), "{}", e.message);
        s.admit("a", "web", far()).await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_over_its_share_waits_for_a_slot_rather_than_failing() {
        let s = Arc::new(scheduler(25, 100));
        let held = s.admit("a", "ci", far()).await.unwrap();
        let waiting = {
            let s = s.clone();
            tokio::spawn(async move { s.admit("a", "ci", far()).await.is_ok() })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(held);
        assert!(waiting.await.unwrap(), "the queued call got the freed slot");
        // Never waits past the call's own deadline.
        let _held = s.admit("a", "ci", far()).await.unwrap();
        let started = Instant::now();
        let soon = started + Duration::from_millis(10);
        assert!(s.admit("a", "ci", soon).await.is_err());
        assert_eq!(started.elapsed(), Duration::from_millis(10));
    }
}
