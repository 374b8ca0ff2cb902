//! SIGINT and SIGTERM for the long-running commands (`serve`, `call`).
//!
//! [`install`] blocks both signals in the calling thread before any runtime
//! thread exists, so every thread started later inherits the mask, and one
//! dedicated thread takes them with `sigwait`. Nothing runs in signal-handler
//! context, which is what makes this small enough to own instead of tokio's
//! `signal` feature. The first signal is reported to [`Signals::received`]; a
//! second one exits at once with status 128 + its number, so an operator who
//! presses Ctrl-C twice does not wait for the shutdown grace.

use tokio::sync::watch;

/// The first SIGINT or SIGTERM the process received, once it arrives.
pub(super) struct Signals {
    first: watch::Receiver<Option<i32>>,
}

impl Signals {
    /// Resolves when SIGINT or SIGTERM has arrived (at once if one already has).
    pub(super) async fn received(mut self) {
        // An error means the waiting thread is gone, which it never is: it loops
        // for the life of the process.
        let _ = self.first.wait_for(Option::is_some).await;
    }
}

/// Takes SIGINT and SIGTERM over for this process. Call it before starting
/// threads: a thread started earlier keeps the default action (terminate).
#[cfg(unix)]
pub(super) fn install() -> std::io::Result<Signals> {
    let set = shutdown_signals();
    // SAFETY: `set` is an initialised signal set and the old mask is not asked for.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(std::io::Error::from_raw_os_error(rc));
    }
    let (tx, first) = watch::channel(None);
    std::thread::Builder::new()
        .name("wasmhub-signals".into())
        .spawn(move || {
            loop {
                let mut signal = 0;
                // SAFETY: `set` is initialised and `signal` is a valid place to write.
                if unsafe { libc::sigwait(&set, &mut signal) } != 0 {
                    continue;
                }
                if tx.send_replace(Some(signal)).is_some() {
                    crate::warn!("second signal, exiting now");
                    std::process::exit(128 + signal);
                }
            }
        })?;
    Ok(Signals { first })
}

/// Elsewhere Ctrl-C keeps its default action; nothing is reported.
#[cfg(not(unix))]
pub fn install() -> std::io::Result<Signals> {
    let (tx, first) = watch::channel(None);
    // Never sends: keep the channel open so `received` stays pending.
    std::mem::forget(tx);
    Ok(Signals { first })
}

#[cfg(unix)]
fn shutdown_signals() -> libc::sigset_t {
    let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigemptyset initialises the set before sigaddset and assume_init read it.
    unsafe {
        libc::sigemptyset(set.as_mut_ptr());
        libc::sigaddset(set.as_mut_ptr(), libc::SIGINT);
        libc::sigaddset(set.as_mut_ptr(), libc::SIGTERM);
        set.assume_init()
    }
}
