//! Running the real `wasmhub` binary: its stderr read line by line (so a test waits
//! for what the hub logs), and where a spawned `wasmhub serve` listens.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::Child;
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
