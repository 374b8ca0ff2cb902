//! Running the real `wasmhub` binary: where a spawned `wasmhub serve` listens.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::Child;
use std::time::Duration;

/// Reads the child's stderr (it must be piped) until the hub logs
/// `listening on http://ADDR`, and returns ADDR. The log keeps being drained in a
/// thread so the pipe never fills while the test runs.
pub fn listen_addr(child: &mut Child, timeout: Duration) -> SocketAddr {
    let stderr = child.stderr.take().expect("wasmhub's stderr is piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(addr) = line.split("listening on http://").nth(1) {
                let _ = tx.send(addr.trim().to_string());
            }
        }
    });
    let addr = rx.recv_timeout(timeout).expect("the hub says where it listens");
    addr.parse().expect("a socket address")
}
