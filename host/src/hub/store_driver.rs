//! Runs the stores' futures on the hub's writer threads (the audit log's and
//! accounting's): those threads are plain std threads, so they never block an
//! async worker, but the stores' interfaces are async (a PostgreSQL store does
//! network round trips).
//!
//! A writer started inside a tokio runtime drives its futures with that runtime's
//! handle: pooled PostgreSQL connections keep their background task on the runtime
//! that opened them, so they must stay on the hub's runtime (a private runtime
//! would only drive a connection while its writer happens to wait on it). A writer
//! started outside any runtime (a sled hub in a plain test) gets a private
//! current-thread runtime.

use std::future::Future;
use tokio::runtime::{Builder, Handle, Runtime};

/// How a writer thread runs store futures.
pub(crate) enum Driver {
    /// The runtime the hub was started on.
    Shared(Handle),
    /// A current-thread runtime of the writer's own.
    Own(Runtime),
}

impl Driver {
    /// The current runtime's handle, or a private runtime when there is none.
    /// Call it on the thread that starts the writer.
    pub(crate) fn new() -> std::io::Result<Driver> {
        match Handle::try_current() {
            Ok(handle) => Ok(Driver::Shared(handle)),
            Err(_) => Ok(Driver::Own(Builder::new_current_thread().enable_all().build()?)),
        }
    }

    /// Runs `future` to completion on the calling (writer) thread.
    pub(crate) fn run<F: Future>(&self, future: F) -> F::Output {
        match self {
            Driver::Shared(handle) => handle.block_on(future),
            Driver::Own(runtime) => runtime.block_on(future),
        }
    }
}
