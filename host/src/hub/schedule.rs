//! Fair shares of the instance pool, in levels: principal (token) → plugin within
//! the principal → call. Every call (nested ones included) takes one slot before it
//! runs, counted against its token, its plugin within that token, its plugin across
//! tokens and the pool, so one plugin cannot take its token's share from the
//! token's other plugins, and one token or one plugin cannot take the pool.
//!
//! - Between tokens: each token holds at most `limits.caller_share_percent` of
//!   `limits.max_instances` (a fixed cap, so what one token gets never depends on
//!   when the others arrive), and each plugin across all tokens at most
//!   `limits.plugin_share_percent`.
//! - Within a token, work-conserving: a plugin holds up to its *part*,
//!   `limits.caller_plugin_share_percent` of its token's slots, whenever the token
//!   has room. Past its part it *borrows*: it may take a slot only while none of
//!   the token's other plugins waits for one (and could use it), and only while
//!   `limits.caller_reserve_percent` of the token's slots (at least one) stay free.
//!   So a plugin alone uses all but the reserve; a newcomer always finds the
//!   reserve free, and while it waits, every slot a borrower frees goes to it, up
//!   to its own part. Nothing is taken back from a running call.
//!
//! A call that cannot take a slot waits for one for at most `limits.queue_ms`
//! (never past its deadline), then fails with `call_limit` naming the level and key it waited on, checked from
//! the token's share outwards. The books keep only tokens and plugins with calls
//! running or waiting.
//!
//! A freed slot wakes only the waiters it may let through: those of its token,
//! and only when one of them would now pass the token's levels, and those
//! waiting at the plugin or pool level. (Waking every waiter at every freed slot
//! made a token's benign calls pay for another's queue: with 13 to 128 spinning
//! calls queued, each benign call's end woke all of them on the async workers,
//! each to re-check and re-arm its timer, `bench/fairness.sh` pool-spin.)

use super::error::{CallError, Limit};
use crate::config::ShareLimits;
use crate::race::{Race, race};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// Slots of the pool and of each share.
pub(crate) struct Scheduler(Arc<Shares>);

/// The scheduler's sizes and books, shared with the slots it gave out.
struct Shares {
    queue: Duration,
    pool_size: u32,
    /// Slots of one plugin's share across tokens, and the configured percentage.
    plugin_cap: (u32, u32),
    /// Slots of one token's share, and the configured percentage.
    caller_cap: (u32, u32),
    /// Slots of a token's share one plugin holds without borrowing, and the percentage.
    part: (u32, u32),
    /// Slots of a token's share a borrowing plugin leaves free, and the percentage.
    reserve: (u32, u32),
    books: Mutex<Books>,
    /// Wakes the calls waiting at the plugin or pool level when a slot is freed.
    wide: Arc<Notify>,
}

/// Who holds and who waits for slots now.
#[derive(Default)]
struct Books {
    pool: u32,
    /// Slots each plugin holds, across tokens.
    plugins: HashMap<String, u32>,
    callers: HashMap<String, Caller>,
    /// Calls waiting at the plugin or pool level (on `Shares::wide`).
    wide_waiting: u32,
}

/// One token's slots, and its plugins' slots and waiting calls.
#[derive(Default)]
struct Caller {
    held: u32,
    plugins: HashMap<String, Use>,
    /// Wakes its calls waiting at the token's levels.
    freed: Arc<Notify>,
}

#[derive(Default, Clone, Copy)]
struct Use {
    held: u32,
    waiting: u32,
}

/// Why a call cannot take a slot now (the level it waits at).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    Caller,
    Plugin,
    /// Past its part of the token's share while the token's other plugins wait.
    PluginInCaller {
        others_waiting: bool,
    },
    Pool,
}

/// The slot a running call holds; dropping it frees it.
pub(crate) struct Slot {
    shares: Arc<Shares>,
    plugin: String,
    caller: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.shares.release(&self.plugin, &self.caller);
    }
}

/// `percent` of `of` slots, rounded up, and the percentage (at most 100).
fn share(of: u32, percent: u32) -> (u32, u32) {
    let percent = percent.min(100);
    ((u64::from(of) * u64::from(percent)).div_ceil(100) as u32, percent)
}

impl Scheduler {
    /// Shares of a pool of `pool_size` slots (`limits.max_instances`).
    pub(super) fn new(pool_size: u32, limits: &ShareLimits) -> Scheduler {
        let pool_size = pool_size.max(1);
        let at_least_one = |percent: u32| share(pool_size, percent.max(1));
        let caller_cap = at_least_one(limits.caller_percent);
        Scheduler(Arc::new(Shares {
            queue: Duration::from_millis(limits.queue_ms),
            pool_size,
            plugin_cap: at_least_one(limits.plugin_percent),
            caller_cap,
            part: share(caller_cap.0, limits.caller_plugin_percent.max(1)),
            reserve: share(caller_cap.0, limits.caller_reserve_percent),
            books: Mutex::default(),
            wide: Arc::default(),
        }))
    }

    /// Waits (boundedly, never past `deadline`) until `plugin`'s call for `caller`
    /// may take a slot at every level, and takes it.
    pub(super) async fn admit(
        &self,
        plugin: &str,
        caller: &str,
        deadline: Instant,
    ) -> Result<Slot, CallError> {
        let shares = &self.0;
        let until = deadline.min(Instant::now() + shares.queue);
        let mut timer = std::pin::pin!(tokio::time::sleep_until(until));
        let mut waiting: Option<Waiting<'_>> = None;
        loop {
            let (freed, wait) = {
                let mut books = shares.lock();
                let Some(wait) = shares.check(&books, plugin, caller) else {
                    books.take(plugin, caller);
                    return Ok(Slot {
                        shares: self.0.clone(),
                        plugin: plugin.to_string(),
                        caller: caller.to_string(),
                    });
                };
                let waiter = waiting.get_or_insert_with(|| {
                    books.use_of(caller, plugin).waiting += 1;
                    Waiting {
                        shares,
                        plugin,
                        caller,
                        wide: false,
                    }
                });
                let notify = waiter.waits_at(&mut books, wait);
                // Registered under the lock: a slot freed after this check is
                // released under it too, and then wakes us.
                let mut freed = Box::pin(notify.notified_owned());
                freed.as_mut().enable();
                (freed, wait)
            };
            if let Race::Second(()) = race(freed, timer.as_mut()).await {
                return Err(shares.refused(wait, plugin, caller));
            }
        }
    }
}

impl Shares {
    fn lock(&self) -> std::sync::MutexGuard<'_, Books> {
        self.books.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Where `plugin`'s call for `caller` must wait now, from the token's share
    /// outwards; `None`: it may take a slot.
    fn check(&self, books: &Books, plugin: &str, caller: &str) -> Option<Wait> {
        let of_caller = books.callers.get(caller);
        let caller_held = of_caller.map_or(0, |c| c.held);
        if caller_held >= self.caller_cap.0 {
            return Some(Wait::Caller);
        }
        if books.held_by(plugin) >= self.plugin_cap.0 {
            return Some(Wait::Plugin);
        }
        let mine = of_caller
            .and_then(|c| c.plugins.get(plugin))
            .map_or(0, |u| u.held);
        if mine >= self.part.0 {
            // Borrowing: only while no other plugin of the token waits within its
            // part (and could run), and the reserve stays free.
            let others_waiting = of_caller.is_some_and(|c| {
                c.plugins.iter().any(|(other, u)| {
                    other != plugin
                        && u.waiting > 0
                        && u.held < self.part.0
                        && books.held_by(other) < self.plugin_cap.0
                })
            });
            if others_waiting || caller_held + self.reserve.0 >= self.caller_cap.0 {
                return Some(Wait::PluginInCaller { others_waiting });
            }
        }
        if books.pool >= self.pool_size {
            return Some(Wait::Pool);
        }
        None
    }

    fn release(&self, plugin: &str, caller: &str) {
        let (of_caller, wide) = {
            let mut books = self.lock();
            books.pool -= 1;
            if let Some(held) = books.plugins.get_mut(plugin) {
                *held -= 1;
                if *held == 0 {
                    books.plugins.remove(plugin);
                }
            }
            if let Some(of_caller) = books.callers.get_mut(caller) {
                of_caller.held -= 1;
            }
            books.use_of(caller, plugin).held -= 1;
            books.forget_idle(caller, plugin);
            (self.passing(&books, caller), books.wide_waiting > 0)
        };
        self.wake(of_caller, wide);
    }

    /// `caller`'s waiters' wake-up, if one of them would now pass the token's
    /// levels (it may still wait at a wider one: it then moves to `wide`).
    fn passing(&self, books: &Books, caller: &str) -> Option<Arc<Notify>> {
        let of_caller = books.callers.get(caller)?;
        let passes = |(plugin, u): (&String, &Use)| {
            u.waiting > 0
                && !matches!(
                    self.check(books, plugin, caller),
                    Some(Wait::Caller | Wait::PluginInCaller { .. })
                )
        };
        of_caller
            .plugins
            .iter()
            .any(passes)
            .then(|| of_caller.freed.clone())
    }

    /// Wakes a token's waiters (`passing`) and, when `wide`, those waiting at
    /// the plugin or pool level.
    fn wake(&self, of_caller: Option<Arc<Notify>>, wide: bool) {
        if let Some(freed) = of_caller {
            freed.notify_waiters();
        }
        if wide {
            self.wide.notify_waiters();
        }
    }

    /// The error of a call that waited its time at `wait`.
    fn refused(&self, wait: Wait, plugin: &str, caller: &str) -> CallError {
        let waited = format!(
            "waited up to {} ms (limits.queue_ms) for one to finish; retry shortly",
            self.queue.as_millis()
        );
        let pool = self.pool_size;
        let (limit, message) = match wait {
            Wait::Caller => (
                Limit::CallerShare,
                format!(
                    "the token {caller:?} already runs {} calls at once, its share of the instance pool ({} = {}% of {pool} slots); {waited}",
                    self.caller_cap.0,
                    Limit::CallerShare.key(),
                    self.caller_cap.1
                ),
            ),
            Wait::Plugin => (
                Limit::PluginShare,
                format!(
                    "the plugin {plugin:?} already runs {} calls at once, its share of the instance pool ({} = {}% of {pool} slots); {waited}",
                    self.plugin_cap.0,
                    Limit::PluginShare.key(),
                    self.plugin_cap.1
                ),
            ),
            Wait::PluginInCaller { others_waiting } => {
                let why = match others_waiting {
                    true => "and the token's other plugins are waiting for slots".to_string(),
                    false => format!(
                        "and may borrow only while {} of the token's slots stay free for its other plugins (limits.caller_reserve_percent = {}%)",
                        self.reserve.0, self.reserve.1
                    ),
                };
                (
                    Limit::CallerPluginShare,
                    format!(
                        "the plugin {plugin:?} within token {caller:?} already runs at least {} calls at once, its part of the token's {} slots ({} = {}%), {why}; {waited}",
                        self.part.0,
                        self.caller_cap.0,
                        Limit::CallerPluginShare.key(),
                        self.part.1
                    ),
                )
            }
            Wait::Pool => (
                Limit::Instances,
                format!(
                    "all {pool} plugin instance slots ({}) are busy; {waited}",
                    Limit::Instances.key()
                ),
            ),
        };
        CallError::limit(limit, message)
    }
}

impl Books {
    fn held_by(&self, plugin: &str) -> u32 {
        self.plugins.get(plugin).copied().unwrap_or(0)
    }

    /// `plugin`'s use of `caller`'s share, made on first use (looked up first:
    /// a busy hub takes slots for the same names over and over).
    fn use_of(&mut self, caller: &str, plugin: &str) -> &mut Use {
        let of_caller = entry(&mut self.callers, caller);
        entry(&mut of_caller.plugins, plugin)
    }

    fn take(&mut self, plugin: &str, caller: &str) {
        self.pool += 1;
        *entry(&mut self.plugins, plugin) += 1;
        entry(&mut self.callers, caller).held += 1;
        self.use_of(caller, plugin).held += 1;
    }

    /// Drops the entries of a plugin and token with nothing held or waiting.
    fn forget_idle(&mut self, caller: &str, plugin: &str) {
        let Some(of_caller) = self.callers.get_mut(caller) else {
            return;
        };
        if of_caller
            .plugins
            .get(plugin)
            .is_some_and(|u| u.held == 0 && u.waiting == 0)
        {
            of_caller.plugins.remove(plugin);
        }
        if of_caller.plugins.is_empty() {
            self.callers.remove(caller);
        }
    }
}

/// The entry of `name` in `map`, made (a name allocated) only when missing.
fn entry<'a, T: Default>(map: &'a mut HashMap<String, T>, name: &str) -> &'a mut T {
    if !map.contains_key(name) {
        map.insert(name.to_string(), T::default());
    }
    map.get_mut(name).expect("inserted above")
}

/// A call counted as waiting for a slot until dropped (it got one, gave up, or was
/// cancelled): the token's borrowing plugins then may take slots again.
struct Waiting<'a> {
    shares: &'a Shares,
    plugin: &'a str,
    caller: &'a str,
    /// Whether it counts in `Books::wide_waiting`.
    wide: bool,
}

impl Waiting<'_> {
    /// It waits at `wait` now: the wake-up to wait for (its token's, or the
    /// plugin and pool levels').
    fn waits_at(&mut self, books: &mut Books, wait: Wait) -> Arc<Notify> {
        let wide = matches!(wait, Wait::Plugin | Wait::Pool);
        if wide != self.wide {
            match wide {
                true => books.wide_waiting += 1,
                false => books.wide_waiting -= 1,
            }
            self.wide = wide;
        }
        match wide {
            true => self.shares.wide.clone(),
            false => entry(&mut books.callers, self.caller).freed.clone(),
        }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        // One waiter fewer may let a borrowing plugin of its token through (it
        // frees no slot: the plugin and pool levels stay as they were).
        let of_caller = {
            let mut books = self.shares.lock();
            books.use_of(self.caller, self.plugin).waiting -= 1;
            if self.wide {
                books.wide_waiting -= 1;
            }
            let of_caller = self.shares.passing(&books, self.caller);
            books.forget_idle(self.caller, self.plugin);
            of_caller
        };
        self.shares.wake(of_caller, false);
    }
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;
