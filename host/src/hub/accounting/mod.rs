//! Accounting: one [`AccountingRecord`] per model step (provider, model, tokens,
//! latency, cost from `[accounting.prices]`), per operation call (its call-graph
//! ids, latency, bytes in and out, outcome) and per activation of the agent's
//! context guard (projected, limit and remaining tokens), with each chat
//! session's sums, and optionally appended to a JSONL file (`accounting.jsonl`,
//! a local file of each process).
//!
//! Accounting is a record kind of the record pipeline (`hub::records`, `kind`):
//! recording never waits; with the queue (`accounting.queue`) full the record is
//! dropped, counted in `wasmhub_accounting_dropped_total` and logged. Reads go
//! through the writer after what was queued before them, so a client that saw a
//! turn end reads its records; call them off the async workers. The store
//! (`store`) is the record log `accounting` with the sled table
//! `accounting_sessions` on the embedded backend, or PostgreSQL shared by every
//! replica. The agent and the surfaces hold the [`Accounting`] handle
//! (`Hub::accounting`).
//!
//! - `record`: the record and session-sum shapes;
//! - `prices`: cost from the configured prices;
//! - `store`: the [`AccountingStore`] interface and its implementations;
//! - `kind`: accounting as a record kind: its reads, the JSONL file, forgetting
//!   a session's sums.

mod kind;
mod prices;
mod record;
pub(crate) mod store;

pub use record::{
    AccountingRecord, ContextGuard, Entry, GuardOutcome, GuardTrigger, ModelStep, SessionUsage, ToolCall,
};

pub(crate) use store::AccountingStore;

use crate::config::AccountingConfig;
use crate::hub::HubError;
use crate::hub::auth::Visible;
use crate::hub::records::Records;
use kind::{AccountingRecords, ForgetSession, Read};
use prices::Prices;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::TrySendError;

/// Where a page of `GET /api/accounting` starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Since {
    /// The oldest record kept.
    Start,
    /// Records after this id (exclusive).
    Id(u64),
    /// Records that ended at or after this Unix millisecond.
    Time(u64),
}

/// A page of records, oldest first.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Page {
    /// The records, in id order.
    pub records: Vec<AccountingRecord>,
    /// The `since` id for the next page: the last record's id (or, with none, an
    /// id no later record can be at or below).
    pub next: u64,
}

/// Why accounting could not start.
#[derive(Debug)]
pub enum AccountingError {
    /// The JSONL file (`accounting.jsonl`) could not be opened for appending.
    Jsonl {
        /// The configured file.
        path: PathBuf,
        /// The filesystem error.
        source: std::io::Error,
    },
    /// The writer thread could not be started.
    Writer(std::io::Error),
}

impl std::fmt::Display for AccountingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AccountingError::Jsonl { path, source } => write!(
                f,
                "accounting.jsonl: cannot open {} for appending: {source}",
                path.display()
            ),
            AccountingError::Writer(e) => write!(f, "accounting: cannot start the writer: {e}"),
        }
    }
}

impl std::error::Error for AccountingError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AccountingError::Jsonl { source, .. } | AccountingError::Writer(source) => Some(source),
        }
    }
}

/// The accounting handle, owned by the hub and shared with the agent and the
/// surfaces.
pub(crate) struct Accounting {
    records: Records<AccountingRecords>,
    prices: Prices,
}

impl Accounting {
    /// Opens the JSONL file (when configured) and starts the writer over `store`.
    pub(crate) fn start(
        store: Arc<dyn AccountingStore>,
        config: &AccountingConfig,
    ) -> Result<Accounting, AccountingError> {
        let jsonl = match &config.jsonl {
            None => None,
            Some(path) => Some(open_jsonl(path).map_err(|source| AccountingError::Jsonl {
                path: path.clone(),
                source,
            })?),
        };
        let kind = AccountingRecords { store, jsonl };
        Ok(Accounting {
            records: Records::start(kind, config.queue, config.retention).map_err(AccountingError::Writer)?,
            prices: Prices::new(&config.prices),
        })
    }

    /// Queues `record` (its id is given when stored); never blocks.
    pub(crate) fn record(&self, record: AccountingRecord) {
        if let Err(TrySendError::Full(_)) = self.records.offer(record) {
            let n = self.records.count_dropped();
            if n == 1 || n.is_multiple_of(1000) {
                crate::warn!(
                    "accounting: the writer is behind, {n} records dropped so far (accounting.queue)"
                );
            }
        }
    }

    /// Queues the record of `entry`, which ended now, run under `caller` (through
    /// OAuth `client`, for a grant; in `session`, for agent turns); a model step
    /// gets its cost. Never blocks.
    pub(crate) fn account(
        &self,
        session: Option<&str>,
        caller: &str,
        client: Option<&str>,
        agent: Option<&str>,
        mut entry: Entry,
    ) {
        if let Entry::ModelStep(step) = &mut entry {
            step.cost = self.prices.cost(step);
        }
        self.record(AccountingRecord {
            id: 0,
            time_ms: crate::clock::now_ms(),
            session: session.map(str::to_string),
            caller: caller.to_string(),
            client: client.map(str::to_string),
            agent: agent.map(str::to_string),
            entry,
        });
    }

    /// Drops the sums of `session` once the records queued before are stored
    /// (in order with them, so none is added back after). Never waits.
    pub(crate) fn forget_session(&self, session: &str) {
        self.records.order(ForgetSession(session.to_string()));
    }

    /// Records dropped because the writer could not keep up.
    pub(crate) fn dropped(&self) -> u64 {
        self.records.dropped()
    }

    /// Up to `limit` records after `since` that `visible` admits, oldest first,
    /// of every writer, including every record queued here before this call.
    /// Waits for the writer: call it off the async workers.
    pub(crate) fn page(&self, since: Since, limit: usize, visible: &Visible) -> Result<Page, HubError> {
        if *visible == Visible::Nothing {
            // Nothing to show, and `next` must not tell how far others' records go.
            let next = match since {
                Since::Id(id) => id,
                Since::Start | Since::Time(_) => 0,
            };
            return Ok(Page {
                records: Vec::new(),
                next,
            });
        }
        let principal = visible.principal().map(str::to_string);
        self.records.read(|reply| Read::Page {
            since,
            limit,
            principal,
            reply,
        })
    }

    /// The sums of each of `sessions` (zero for one without records), including
    /// every record queued here before this call. Waits for the writer: call it
    /// off the async workers.
    pub(crate) fn session_usage<'s>(
        &self,
        sessions: impl IntoIterator<Item = &'s str>,
    ) -> Result<Vec<SessionUsage>, HubError> {
        let sessions = sessions.into_iter().map(str::to_string).collect();
        self.records.read(|reply| Read::Sums { sessions, reply })
    }
}

fn open_jsonl(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::OpenOptions::new().create(true).append(true).open(path)
}

#[cfg(test)]
mod tests;
