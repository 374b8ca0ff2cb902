//! Calls waiting for an operator's decision: a call whose policy says `ask`, on a
//! surface that cannot ask its own user, is listed here (`GET /api/approvals`) for
//! at most `approvals.wait_secs` while an operator approves or denies it
//! (`POST /api/approvals/{id}`). The table is bounded (`approvals.max_pending`); an
//! entry leaves it when it is decided, times out, or its call is cancelled.

use crate::hub::cancel::CancelToken;
use crate::race::{Race, race};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::oneshot;

/// A call waiting for a decision, as operators see it.
#[derive(Debug, Clone, Serialize)]
pub struct PendingApproval {
    /// The approval's id (`apr_...`), the `{id}` of `POST /api/approvals/{id}`.
    pub id: String,
    /// The call's id in the audit log.
    pub call_id: String,
    /// The operation, `plugin.operation`.
    pub tool: String,
    /// The token the call runs under.
    pub caller: String,
    /// The validated input, redacted and cut like the audit log's excerpt.
    pub input: Option<Value>,
    /// The operation's hints that hold (`destructive`, `open_world`, ...).
    pub hints: Vec<&'static str>,
    /// The policy key that asked for the approval.
    pub policy: Option<String>,
    /// When it was asked, in Unix milliseconds.
    pub requested_ms: u64,
    /// When it stops waiting, in Unix milliseconds.
    pub expires_ms: u64,
}

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    /// Whether the call may run.
    pub approved: bool,
    /// Who decided (a token name).
    pub by: String,
    /// Why, when they said.
    pub reason: Option<String>,
}

/// How waiting for a decision ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Waited {
    /// Someone decided.
    Decided(Verdict),
    /// Nobody decided within `approvals.wait_secs`.
    TimedOut,
    /// The call was cancelled while it waited.
    Cancelled,
    /// `approvals.max_pending` calls are already waiting.
    Full,
}

/// Why a decision could not be recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecideError {
    /// No call waits under that id (never issued, decided, timed out or cancelled).
    Unknown(String),
}

impl std::fmt::Display for DecideError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecideError::Unknown(id) => write!(
                f,
                "no call waits for approval {id:?}: it was never issued, or it was decided, timed out or \
                 cancelled already"
            ),
        }
    }
}

impl std::error::Error for DecideError {}

struct Entry {
    info: PendingApproval,
    answer: oneshot::Sender<Verdict>,
}

/// The table of calls waiting for an operator.
pub(crate) struct PendingApprovals {
    wait: Duration,
    max: usize,
    table: Mutex<HashMap<String, Entry>>,
}

impl PendingApprovals {
    /// A table whose calls wait at most `wait`, at most `max` at once.
    pub(crate) fn new(wait: Duration, max: usize) -> PendingApprovals {
        PendingApprovals {
            wait,
            max,
            table: Mutex::new(HashMap::new()),
        }
    }

    /// How long a call waits for a decision (`approvals.wait_secs`).
    pub(crate) fn wait(&self) -> Duration {
        self.wait
    }

    /// Lists `info` and waits, within `wait` and `until`, for its decision; the
    /// entry is gone when this returns, whatever ended the wait.
    pub(crate) async fn request(
        &self,
        info: PendingApproval,
        until: tokio::time::Instant,
        cancel: &CancelToken,
    ) -> Waited {
        let id = info.id.clone();
        let (tx, rx) = oneshot::channel();
        {
            let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
            if table.len() >= self.max {
                return Waited::Full;
            }
            table.insert(id.clone(), Entry { info, answer: tx });
        }
        let _leave = Leave {
            table: &self.table,
            id,
        };
        let until = until.min(tokio::time::Instant::now() + self.wait);
        match race(tokio::time::timeout_at(until, rx), cancel.cancelled()).await {
            Race::First(Ok(Ok(verdict))) => Waited::Decided(verdict),
            // Timed out; a dropped sender cannot happen while the entry is listed.
            Race::First(_) => Waited::TimedOut,
            Race::Second(()) => Waited::Cancelled,
        }
    }

    /// Records `verdict` for approval `id`; the waiting call resumes.
    pub(crate) fn decide(&self, id: &str, verdict: Verdict) -> Result<PendingApproval, DecideError> {
        let entry = self
            .table
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id)
            .ok_or_else(|| DecideError::Unknown(id.to_string()))?;
        // The call may have stopped waiting in the same instant: nothing to do then.
        let _ = entry.answer.send(verdict);
        Ok(entry.info)
    }

    /// The calls waiting now, oldest first.
    pub(crate) fn list(&self) -> Vec<PendingApproval> {
        let table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        let mut all: Vec<PendingApproval> = table.values().map(|e| e.info.clone()).collect();
        all.sort_by(|a, b| a.requested_ms.cmp(&b.requested_ms).then_with(|| a.id.cmp(&b.id)));
        all
    }
}

/// Removes a waiting call's entry however its wait ends (a dropped future too).
struct Leave<'a> {
    table: &'a Mutex<HashMap<String, Entry>>,
    id: String,
}

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.table
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(id: &str) -> PendingApproval {
        PendingApproval {
            id: id.into(),
            call_id: format!("call_{id}"),
            tool: "files.delete".into(),
            caller: "ci".into(),
            input: None,
            hints: vec!["destructive"],
            policy: Some("approvals.destructive".into()),
            requested_ms: 1,
            expires_ms: 2,
        }
    }

    fn far() -> tokio::time::Instant {
        tokio::time::Instant::now() + Duration::from_secs(3600)
    }

    #[tokio::test(start_paused = true)]
    async fn a_decision_resumes_the_waiting_call_and_leaves_the_table() {
        let table = std::sync::Arc::new(PendingApprovals::new(Duration::from_secs(60), 8));
        let cancel = CancelToken::new();
        let waiting = {
            let (table, cancel) = (table.clone(), cancel.clone());
            tokio::spawn(async move { table.request(info("a"), far(), &cancel).await })
        };
        while table.list().is_empty() {
            tokio::task::yield_now().await;
        }
        assert_eq!(table.list()[0].tool, "files.delete");
        let verdict = Verdict {
            approved: true,
            by: "ops".into(),
            reason: None,
        };
        assert_eq!(table.decide("a", verdict.clone()).unwrap().call_id, "call_a");
        assert_eq!(waiting.await.unwrap(), Waited::Decided(verdict));
        assert!(table.list().is_empty());
        // Decided already: the id is unknown now.
        let again = table.decide(
            "a",
            Verdict {
                approved: false,
                by: "ops".into(),
                reason: None,
            },
        );
        assert_eq!(again.unwrap_err(), DecideError::Unknown("a".into()));
    }

    #[tokio::test(start_paused = true)]
    async fn nobody_deciding_times_out_and_a_full_table_refuses() {
        let table = PendingApprovals::new(Duration::from_secs(5), 1);
        let cancel = CancelToken::new();
        assert_eq!(table.request(info("a"), far(), &cancel).await, Waited::TimedOut);
        assert!(table.list().is_empty());
        let table = std::sync::Arc::new(table);
        let first = {
            let (table, cancel) = (table.clone(), cancel.clone());
            tokio::spawn(async move { table.request(info("b"), far(), &cancel).await })
        };
        while table.list().is_empty() {
            tokio::task::yield_now().await;
        }
        assert_eq!(table.request(info("c"), far(), &cancel).await, Waited::Full);
        cancel.cancel();
        assert_eq!(first.await.unwrap(), Waited::Cancelled);
        assert!(table.list().is_empty());
    }
}
