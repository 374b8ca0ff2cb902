//! A stdio MCP server's child process: started with only the allowed part of the
//! hub's environment plus its configured variables, in its own process group, its
//! stdin/stdout as non-blocking pipes for the async side; one thread waits for it
//! (reaping it, so no zombie is left) and reports how it ended; stopping it is
//! SIGTERM to the group, then SIGKILL after the grace time.
//!
//! The pid is signalled only while the child is known not to be reaped: the waiter
//! thread first waits without reaping (`waitid(WNOWAIT)`), marks the child gone
//! under the same lock the signaller holds, and only then reaps, so a pid reused by
//! another process is never signalled.

use super::error::StartError;
use crate::config::McpServerConfig;
use crate::secret_ref::SecretRef;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::unix::pipe;
use tokio::sync::watch;

/// A running child and its pipes (taken once by the connection).
pub(super) struct Child {
    pub pid: u32,
    pub stdin: Option<pipe::Sender>,
    pub stdout: Option<pipe::Receiver>,
    pub stderr: Option<pipe::Receiver>,
    /// `Some(how it ended)` once the child has exited.
    pub exited: watch::Receiver<Option<Exit>>,
    alive: Arc<Mutex<bool>>,
    grace: Duration,
}

/// How a child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Exit {
    /// It exited with this status code.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(code) => write!(f, "exited with status {code}"),
            Exit::Signal(signal) => write!(f, "was ended by signal {signal}"),
        }
    }
}

impl From<ExitStatus> for Exit {
    fn from(status: ExitStatus) -> Exit {
        match (status.code(), status.signal()) {
            (Some(code), _) => Exit::Code(code),
            (None, Some(signal)) => Exit::Signal(signal),
            (None, None) => Exit::Code(-1),
        }
    }
}

/// Starts the server of `config` (a stdio one); its env values' secret references
/// are resolved now.
pub(super) fn spawn(config: &McpServerConfig) -> Result<Child, StartError> {
    let program = config.command.as_deref().unwrap_or_default();
    let mut command = Command::new(program);
    command
        .args(&config.args)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group: stopping it also stops what it started (npx → node).
        .process_group(0);
    for name in &config.env_allow {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    for (name, value) in &config.env {
        let secret = SecretRef::parse(value)
            .and_then(|r| r.resolve(config.secret_max_bytes))
            .map_err(|source| StartError::Secret {
                key: format!("env.{name}"),
                source,
            })?;
        command.env(name, secret.expose());
    }
    if let Some(cwd) = &config.cwd {
        command.current_dir(cwd);
    }
    let mut child = command.spawn().map_err(|source| StartError::Spawn {
        command: program.to_string(),
        source,
    })?;
    let pid = child.id();
    let pipes = (
        child.stdin.take().map(|p| pipe::Sender::from_owned_fd(p.into())),
        child
            .stdout
            .take()
            .map(|p| pipe::Receiver::from_owned_fd(p.into())),
        child
            .stderr
            .take()
            .map(|p| pipe::Receiver::from_owned_fd(p.into())),
    );
    let (stdin, stdout, stderr) = match pipes {
        (Some(Ok(i)), Some(Ok(o)), Some(Ok(e))) => (i, o, e),
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(StartError::Pipes);
        }
    };
    let alive = Arc::new(Mutex::new(true));
    let (tx, exited) = watch::channel(None);
    let waiter_alive = alive.clone();
    std::thread::Builder::new()
        .name(format!("mcp-wait-{}", config.name))
        .spawn(move || {
            wait_without_reaping(pid);
            *waiter_alive.lock().unwrap_or_else(|e| e.into_inner()) = false;
            let exit = child.wait().map_or(Exit::Code(-1), Exit::from);
            let _ = tx.send(Some(exit));
        })
        .map_err(StartError::Thread)?;
    Ok(Child {
        pid,
        stdin: Some(stdin),
        stdout: Some(stdout),
        stderr: Some(stderr),
        exited,
        alive,
        grace: Duration::from_millis(config.stop_grace_ms),
    })
}

/// Blocks until `pid` has exited, leaving it to be reaped.
fn wait_without_reaping(pid: u32) {
    loop {
        // SAFETY: a zeroed siginfo_t is a valid out-parameter for waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid only writes `info`; WNOWAIT leaves the child unreaped.
        let r = unsafe { libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

impl Child {
    /// Sends `signal` to the child's process group while the child is not reaped.
    fn signal(&self, signal: i32) {
        let alive = self.alive.lock().unwrap_or_else(|e| e.into_inner());
        if *alive {
            // SAFETY: plain kill(2) on the group the child leads (pid = pgid).
            unsafe { libc::kill(-(self.pid as i32), signal) };
        }
    }

    /// Stops the child: SIGTERM to its group, SIGKILL after the grace time if it
    /// is still there; resolves once it has exited (and been reaped).
    pub(super) async fn stop(&mut self) -> Exit {
        self.stdin = None;
        self.signal(libc::SIGTERM);
        if tokio::time::timeout(self.grace, self.exit()).await.is_err() {
            self.signal(libc::SIGKILL);
        }
        self.exit().await
    }

    /// How the child ended, once it has.
    async fn exit(&self) -> Exit {
        let mut exited = self.exited.clone();
        let exit = exited.wait_for(Option::is_some).await.map_or(None, |e| *e);
        // The waiter thread sends before it ends; without it, nothing is known.
        exit.unwrap_or(Exit::Code(-1))
    }
}

impl Drop for Child {
    /// A child nobody stopped (the hub is going away): SIGTERM now, and SIGKILL
    /// from a thread after the grace time unless it has gone.
    fn drop(&mut self) {
        if !*self.alive.lock().unwrap_or_else(|e| e.into_inner()) {
            return;
        }
        self.signal(libc::SIGTERM);
        let (alive, pid, grace) = (self.alive.clone(), self.pid, self.grace);
        let _ = std::thread::Builder::new()
            .name("mcp-stop".into())
            .spawn(move || {
                std::thread::sleep(grace);
                let alive = alive.lock().unwrap_or_else(|e| e.into_inner());
                if *alive {
                    // SAFETY: as in `signal`; the child is not reaped while `alive` holds.
                    unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
                }
            });
    }
}
