//! A loopback HTTP server that holds every request until the test opens it: a
//! plugin call that GETs it (`flood.burst`) stays in progress for exactly as long
//! as the test wants, and the server's request count is the event that says the
//! call has got that far. Tests use it to run a benign call while an attack is
//! provably still running, without guessing how long anything takes.

use crate::support::runtime::read_request_head;
use crate::support::wait::until;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

/// The server; every request it holds is answered `200 ok` once it is opened.
pub struct Gate {
    pub port: u16,
    received: Arc<AtomicUsize>,
    open: watch::Sender<bool>,
}

impl Gate {
    /// Starts a closed gate on 127.0.0.1.
    pub async fn start() -> Gate {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(AtomicUsize::new(0));
        let (open, _) = watch::channel(false);
        let (count, opened) = (received.clone(), open.clone());
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let (count, mut opened) = (count.clone(), opened.subscribe());
                tokio::spawn(async move {
                    if read_request_head(&mut sock).await.is_none() {
                        return;
                    }
                    count.fetch_add(1, Ordering::SeqCst);
                    if opened.wait_for(|open| *open).await.is_err() {
                        return;
                    }
                    let reply = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok";
                    let _ = sock.write_all(reply.as_bytes()).await;
                });
            }
        });
        Gate { port, received, open }
    }

    /// `127.0.0.1:PORT`, for a network grant and for `flood.burst`.
    pub fn authority(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The manifest that lets a plugin reach the gate.
    pub fn grant(&self) -> String {
        format!("[network]\nallow = [\"{}\"]\n", self.authority())
    }

    /// Requests received so far (held or answered).
    pub fn received(&self) -> usize {
        self.received.load(Ordering::SeqCst)
    }

    /// Until at least `n` requests have arrived.
    pub async fn holds(&self, n: usize) {
        until(&format!("{n} requests at the gate"), || async move {
            (self.received() >= n).then_some(())
        })
        .await
    }

    /// Answers every held request, and every later one at once.
    pub fn open(&self) {
        self.open.send_replace(true);
    }
}
