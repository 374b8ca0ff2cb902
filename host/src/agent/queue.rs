//! Requests waiting for a session's live turn to end: a second message sent while a
//! turn runs waits behind it instead of being refused, first come first served on
//! this replica, at most `agent.queued_turns` per session. A request whose client
//! hangs up leaves the line (its future is dropped with its place).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The lines of this replica's sessions.
pub(crate) struct TurnQueue {
    /// Most requests waiting per session.
    max: usize,
    lines: Mutex<HashMap<String, Line>>,
}

struct Line {
    /// Held by the request at the head of the line while it waits for the lease;
    /// tokio's mutex hands it over in the order it was asked for.
    head: Arc<tokio::sync::Mutex<()>>,
    waiting: usize,
}

/// A request's place in a session's line; leaving it (dropping) frees the place.
pub(crate) struct Place<'q> {
    queue: &'q TurnQueue,
    session: String,
    head: Arc<tokio::sync::Mutex<()>>,
}

/// A session's line is full (`agent.queued_turns`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueFull {
    /// The session.
    pub session_id: String,
    /// `agent.queued_turns`.
    pub max: usize,
}

impl std::fmt::Display for QueueFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a turn is running in session {:?} and {} more requests already wait for it, the most \
             agent.queued_turns allows: wait for the turn to end, or stop it (POST /api/chat/{}/stop)",
            self.session_id, self.max, self.session_id
        )
    }
}

impl std::error::Error for QueueFull {}

impl TurnQueue {
    /// Lines of at most `max` requests.
    pub(crate) fn new(max: usize) -> TurnQueue {
        TurnQueue {
            max,
            lines: Mutex::default(),
        }
    }

    /// Whether requests may wait at all.
    pub(crate) fn enabled(&self) -> bool {
        self.max > 0
    }

    /// Whether requests wait in `session`'s line (a new one goes behind them).
    pub(crate) fn has_waiting(&self, session: &str) -> bool {
        self.lock().get(session).is_some_and(|l| l.waiting > 0)
    }

    /// Requests waiting in every line.
    pub(crate) fn waiting(&self) -> usize {
        self.lock().values().map(|l| l.waiting).sum()
    }

    /// A place at the end of `session`'s line, unless it is full.
    pub(crate) fn enter(&self, session: &str) -> Result<Place<'_>, QueueFull> {
        let mut lines = self.lock();
        let line = lines.entry(session.to_string()).or_insert_with(|| Line {
            head: Arc::default(),
            waiting: 0,
        });
        if line.waiting >= self.max {
            return Err(QueueFull {
                session_id: session.to_string(),
                max: self.max,
            });
        }
        line.waiting += 1;
        Ok(Place {
            queue: self,
            session: session.to_string(),
            head: line.head.clone(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Line>> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Place<'_> {
    /// Waits until every request that entered the line before this one left it;
    /// the line's head holds the guard while it waits for the turn to end.
    pub(crate) async fn head(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.head.lock().await
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let mut lines = self.queue.lock();
        if let Some(line) = lines.get_mut(&self.session) {
            line.waiting -= 1;
            if line.waiting == 0 {
                lines.remove(&self.session);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_line_is_bounded_first_come_first_served_and_left_by_dropping() {
        let queue = TurnQueue::new(2);
        assert!(!queue.has_waiting("s"));
        let first = queue.enter("s").unwrap();
        let second = queue.enter("s").unwrap();
        assert!(queue.has_waiting("s"));
        let full = queue.enter("s").err().unwrap();
        assert_eq!(full.max, 2);
        assert!(full.to_string().contains("agent.queued_turns"), "{full}");
        assert!(queue.enter("other").is_ok(), "each session has its own line");
        let head = first.head().await;
        // The second waits while the first is at the head.
        let waiting = second.head();
        let mut waiting = std::pin::pin!(waiting);
        assert!(poll_once(waiting.as_mut()).await.is_none());
        drop(head);
        drop(first);
        assert!(poll_once(waiting.as_mut()).await.is_some());
        assert!(queue.enter("s").is_ok(), "a place was freed");
    }

    /// Polls `f` once: its output if it was ready.
    async fn poll_once<F: std::future::Future + Unpin>(mut f: F) -> Option<F::Output> {
        std::future::poll_fn(|cx| match std::pin::Pin::new(&mut f).poll(cx) {
            std::task::Poll::Ready(out) => std::task::Poll::Ready(Some(out)),
            std::task::Poll::Pending => std::task::Poll::Ready(None),
        })
        .await
    }
}
