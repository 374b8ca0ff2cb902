//! Running the real `wasmhub` binary: its stderr read line by line (so a test waits
//! for what the hub logs), and where a spawned `wasmhub serve` listens.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The child's stderr, drained in a thread so the pipe never fills while the test runs.
pub struct Stderr {
    lines: Receiver<String>,
    /// Every line read so far, for failure messages.
    seen: Vec<String>,
}

impl Stderr {
    /// Takes the child's stderr (it must be piped).
    pub fn capture(child: &mut Child) -> Stderr {
        let stderr = child.stderr.take().expect("wasmhub's stderr is piped");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Stderr {
            lines,
            seen: Vec::new(),
        }
    }

    /// Every line read so far, oldest first.
    pub fn seen(&self) -> &[String] {
        &self.seen
    }

    /// Every line, once the child has exited and its stderr closed.
    pub fn until_closed(&mut self) -> &[String] {
        while let Ok(line) = self.lines.recv() {
            self.seen.push(line);
        }
        &self.seen
    }

    /// Like [`Stderr::wait_for`], but also finds a line read before.
    pub fn saw_or_wait_for(&mut self, needle: &str, timeout: Duration) -> String {
        match self.seen.iter().find(|line| line.contains(needle)) {
            Some(line) => line.clone(),
            None => self.wait_for(needle, timeout),
        }
    }

    /// Reads until a line contains `needle` and returns it; panics after `timeout`
    /// or when the child closed its stderr first.
    pub fn wait_for(&mut self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no {needle:?} on stderr within {timeout:?}:\n{}",
                        self.seen.join("\n")
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("stderr closed before {needle:?}:\n{}", self.seen.join("\n"))
                }
            }
        }
    }
}

/// Waits until the hub logs `listening on http://ADDR` and has loaded its plugins
/// folder (it loads in the background), and returns ADDR and the rest of its stderr.
pub fn serving(child: &mut Child, timeout: Duration) -> (SocketAddr, Stderr) {
    let (addr, mut stderr) = listening(child, timeout);
    stderr.saw_or_wait_for(" loaded in ", timeout);
    (addr, stderr)
}

/// Waits until the hub logs `listening on http://ADDR` (its plugins may still be
/// loading), and returns ADDR and the rest of its stderr.
pub fn listening(child: &mut Child, timeout: Duration) -> (SocketAddr, Stderr) {
    let mut stderr = Stderr::capture(child);
    let line = stderr.wait_for("listening on http://", timeout);
    let addr = line.split("listening on http://").nth(1).expect("the address");
    (addr.trim().parse().expect("a socket address"), stderr)
}

/// Where the hub listens (see [`serving`]); its stderr keeps being drained.
pub fn listen_addr(child: &mut Child, timeout: Duration) -> SocketAddr {
    // The reading thread goes on draining after its receiver is gone.
    serving(child, timeout).0
}

/// A `wasmhub serve` started by a test: killed and reaped when dropped, so a failing
/// test leaves no hub behind.
pub struct Served {
    pub child: Child,
    pub addr: SocketAddr,
    pub stderr: Stderr,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `wasmhub serve` (log level info) on 127.0.0.1:0 over `plugins` and `data`,
/// with `--set` overrides `sets`, and waits until it has loaded its plugins.
pub fn serve(plugins: &Path, data: &Path, sets: &[&str]) -> Served {
    serve_with_env(plugins, data, sets, &[])
}

/// [`serve`] with extra environment variables.
pub fn serve_with_env(plugins: &Path, data: &Path, sets: &[&str], env: &[(&str, &str)]) -> Served {
    serve_command(plugins, data, sets, env, None)
}

/// [`serve`] with `--config FILE`.
pub fn serve_with_config(plugins: &Path, data: &Path, config: &Path) -> Served {
    serve_command(plugins, data, &[], &[], Some(config))
}

fn serve_command(
    plugins: &Path,
    data: &Path,
    sets: &[&str],
    env: &[(&str, &str)],
    config: Option<&Path>,
) -> Served {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wasmhub"));
    cmd.envs(env.iter().copied());
    cmd.env("WASMHUB_LOG", "info")
        .args(["serve", "--listen", "127.0.0.1:0", "--plugins"])
        .arg(plugins)
        .arg("--data")
        .arg(data);
    if let Some(config) = config {
        cmd.arg("--config").arg(config);
    }
    for set in sets {
        cmd.args(["--set", set]);
    }
    let mut child = cmd
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start wasmhub serve");
    let (addr, stderr) = serving(&mut child, crate::support::wait::PATIENCE);
    Served { child, addr, stderr }
}

/// Whether `line` starts with an RFC 3339 UTC time with milliseconds and a space,
/// like `2026-11-24T11:23:45.678Z `.
pub fn starts_with_timestamp(line: &str) -> bool {
    let b = line.as_bytes();
    let digits = |range: std::ops::Range<usize>| range.into_iter().all(|i| b[i].is_ascii_digit());
    b.len() > 24
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && b[19] == b'.'
        && digits(20..23)
        && &b[23..25] == b"Z "
}
