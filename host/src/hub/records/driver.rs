//! Runs the stores' futures on the record pipeline's writer threads (one per
//! record kind: the audit log's and accounting's): those threads are plain std
//! threads, so they never block an async worker, but the stores' interfaces are
//! async (a PostgreSQL store does network round trips).
//!
//! Each writer drives its futures on a current-thread runtime of its own, never
//! on the hub's: a hub dropped on its runtime's last thread waits for its writers,
//! which must then not need that thread. PostgreSQL connections live on the
//! storage's own I/O thread (`storage::postgres`), so any runtime can use them.

use tokio::runtime::{Builder, Runtime};

/// How a writer thread runs store futures: its own current-thread runtime.
pub(crate) struct Driver(Runtime);

impl Driver {
    /// A runtime for one writer thread.
    pub(crate) fn new() -> std::io::Result<Driver> {
        Builder::new_current_thread().enable_all().build().map(Driver)
    }

    /// Runs `future` to completion on the calling (writer) thread.
    pub(crate) fn run<F: std::future::Future>(&self, future: F) -> F::Output {
        self.0.block_on(future)
    }
}

/// Longest a hub being dropped on a runtime thread waits for a writer to store
/// what was queued: its store's futures may need that runtime's other workers,
/// which may already be gone at shutdown.
const EXIT_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Waits for a writer thread whose channel was closed to store what was queued
/// and end. Off any runtime, for as long as it takes; on one, for at most
/// [`EXIT_WAIT`], then the hub goes without it (and says so).
pub(crate) fn finish_writer(name: &str, writer: std::thread::JoinHandle<()>) {
    if tokio::runtime::Handle::try_current().is_ok() {
        let deadline = std::time::Instant::now() + EXIT_WAIT;
        while !writer.is_finished() {
            if std::time::Instant::now() >= deadline {
                crate::warn!(
                    "{name}: the writer did not finish within {} s at shutdown; records still queued are not stored",
                    EXIT_WAIT.as_secs()
                );
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    let _ = writer.join();
}
