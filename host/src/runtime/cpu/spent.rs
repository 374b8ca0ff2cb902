//! The CPU time one call has spent running its guest, from the thread's own CPU
//! clock (`CLOCK_THREAD_CPUTIME_ID`) read when each of its polls starts and when
//! one that does not finish ends.
//!
//! Ticks are wall time: a trivial call whose worker the kernel took away for a
//! couple of milliseconds (another process, a client on the same cores) reaches
//! its first epoch deadline as if it had spun through a whole tick. Marking its
//! plugin busy for that moved every call of a benign load to the low-priority
//! threads (64 connections of the echo plugin, on a loaded machine: 58 µs of the
//! hub's CPU per call instead of 40 µs, a cross-thread handoff each). So a call
//! makes its plugin busy only once it has used a whole tick of CPU.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A call's CPU time in nanoseconds, shared by its polls and its epoch callback
/// (which run on the same thread while a poll is under way).
#[derive(Debug, Default)]
pub(crate) struct CallCpu {
    /// Whether a poll of it has begun.
    polled: AtomicBool,
    /// The thread's CPU clock when the current poll began; 0 between polls.
    poll_began: AtomicU64,
    /// CPU spent in the earlier polls.
    earlier: AtomicU64,
}

impl CallCpu {
    /// A poll of the call begins on this thread.
    pub(super) fn poll_begins(&self) {
        self.polled.store(true, Ordering::Relaxed);
        // Never 0 within a poll.
        self.poll_began.store(thread_cpu_ns().max(1), Ordering::Relaxed);
    }

    /// A poll that did not finish the call ends on this thread.
    pub(super) fn poll_ends(&self) {
        let began = self.poll_began.swap(0, Ordering::Relaxed);
        self.earlier
            .fetch_add(thread_cpu_ns().saturating_sub(began), Ordering::Relaxed);
    }

    /// The CPU the call has used so far, read on the thread polling it; `None` when
    /// it has never run in a poll (a plugin's load runs its guest outside them).
    pub(super) fn spent(&self) -> Option<u64> {
        if !self.polled.load(Ordering::Relaxed) {
            return None;
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
    fn a_call_is_charged_for_its_polls_cpu_and_not_for_the_time_between_them() {
        let cpu = CallCpu::default();
        assert_eq!(cpu.spent(), None, "never polled");
        cpu.poll_begins();
        spin(2_000_000);
        cpu.poll_ends();
        let first = cpu.spent().unwrap();
        assert!(first >= 2_000_000, "{first}");
        // Between polls the call holds no CPU, whatever this thread does.
        spin(5_000_000);
        assert_eq!(cpu.spent(), Some(first));
        // Within a poll its CPU grows as it runs.
        cpu.poll_begins();
        spin(1_000_000);
        assert!(cpu.spent().unwrap() >= first + 1_000_000);
    }
}
