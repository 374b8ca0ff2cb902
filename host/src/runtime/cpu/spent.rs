//! The CPU time one call has spent running its guest since its first epoch check,
//! from the thread's own CPU clock (`CLOCK_THREAD_CPUTIME_ID`).
//!
//! Ticks are wall time: a trivial call whose worker the kernel took away for a
//! couple of milliseconds (another process, a client on the same cores) reaches
//! its first epoch deadline as if it had spun through a whole tick. Marking its
//! plugin busy for that moved every call of a benign load to the low-priority
//! threads (64 connections of the echo plugin, on a loaded machine: 58 µs of the
//! hub's CPU per call instead of 40 µs, a cross-thread handoff each). So a call
//! makes its plugin busy only once it has also used a whole tick of CPU.
//!
//! That CPU is counted from the call's first epoch check on (it has then run its
//! free first tick, in wall time), not from its first poll: reading the thread's
//! CPU clock is a system call (the kernel takes the run queue's lock for it), and
//! read at the start and end of every poll of every call it took 4% of the hub's
//! CPU at 64 connections of `bench/vs-wassette.sh`, where nearly every call ends
//! before any epoch check. A spinner is then marked busy one tick of CPU after
//! its first check instead of at it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A call's CPU time in nanoseconds, shared by its polls and its epoch callback
/// (which run on the same thread while a poll is under way).
#[derive(Debug, Default)]
pub(crate) struct CallCpu {
    /// Whether a poll of it has begun.
    polled: AtomicBool,
    /// Whether its CPU is counted: from the first time it is asked for, at an
    /// epoch check within a poll.
    counting: AtomicBool,
    /// The thread's CPU clock when the current poll began (or when counting
    /// began within it); 0 when not counting.
    poll_began: AtomicU64,
    /// CPU counted in the earlier polls.
    earlier: AtomicU64,
}

impl CallCpu {
    /// A poll of the call begins on this thread.
    pub(super) fn poll_begins(&self) {
        self.polled.store(true, Ordering::Relaxed);
        if self.counting.load(Ordering::Relaxed) {
            // Never 0 within a counted poll.
            self.poll_began.store(thread_cpu_ns().max(1), Ordering::Relaxed);
        }
    }

    /// A poll that did not finish the call ends on this thread.
    pub(super) fn poll_ends(&self) {
        let began = self.poll_began.swap(0, Ordering::Relaxed);
        if began != 0 {
            self.earlier
                .fetch_add(thread_cpu_ns().saturating_sub(began), Ordering::Relaxed);
        }
    }

    /// The CPU the call has used since it was first asked (0 that first time),
    /// read at an epoch check on the thread polling it; `None` when it has never
    /// run in a poll (a plugin's load runs its guest outside them).
    pub(super) fn spent(&self) -> Option<u64> {
        if !self.polled.load(Ordering::Relaxed) {
            return None;
        }
        if !self.counting.swap(true, Ordering::Relaxed) {
            self.poll_began.store(thread_cpu_ns().max(1), Ordering::Relaxed);
            return Some(0);
        }
        let began = self.poll_began.load(Ordering::Relaxed);
        let now = if began == 0 {
            0
        } else {
            thread_cpu_ns().saturating_sub(began)
        };
        Some(self.earlier.load(Ordering::Relaxed) + now)
    }
}

/// This thread's CPU time (user and system) in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant the
    // kernel has served since 2.6.12, and it cannot fail with valid arguments.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64
}

/// Burns at least `ns` of this thread's CPU.
#[cfg(test)]
pub(super) fn spin(ns: u64) {
    let until = thread_cpu_ns() + ns;
    while thread_cpu_ns() < until {
        std::hint::black_box(0u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_charged_for_its_polls_cpu_from_its_first_check_and_not_between_polls() {
        let cpu = CallCpu::default();
        assert_eq!(cpu.spent(), None, "never polled");
        // Before anyone asks, nothing is counted (and the clock is not read).
        cpu.poll_begins();
        spin(2_000_000);
        cpu.poll_ends();
        cpu.poll_begins();
        spin(1_000_000);
        assert_eq!(cpu.spent(), Some(0), "counting starts at the first check");
        spin(2_000_000);
        cpu.poll_ends();
        let first = cpu.spent().unwrap();
        assert!((2_000_000..3_000_000).contains(&first), "{first}");
        // Between polls the call holds no CPU, whatever this thread does.
        spin(5_000_000);
        assert_eq!(cpu.spent(), Some(first));
        // Within a poll its CPU grows as it runs.
        cpu.poll_begins();
        spin(1_000_000);
        assert!(cpu.spent().unwrap() >= first + 1_000_000);
    }
}
