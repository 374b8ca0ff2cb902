//! Accounting: one [`UsageRecord`] per model step (provider, model, tokens,
//! latency, cost from `[accounting.prices]`), per operation call (its call-graph
//! ids, latency, bytes in and out, outcome) and per activation of the agent's
//! context guard (projected, limit and remaining tokens), stored through a
//! [`UsageStore`] (`store`: the record log `accounting` and the sled table
//! `accounting_sessions`, or PostgreSQL shared by every replica) with each chat
//! session's sums, and optionally appended to a JSONL file (`accounting.jsonl`,
//! a local file of each process).
//!
//! Recording never waits: records go through a bounded channel of
//! `accounting.queue` to a writer thread (`writer`), the audit log's pattern; a
//! full channel drops the record, counted in `wasmhub_accounting_dropped_total`
//! and logged. Reads go through the writer after what was queued before them, so a
//! client that saw a turn end reads its records; call them off the async workers.
//!
//! - `record`: the record and session-sum shapes;
//! - `prices`: cost from the configured prices;
//! - `store`: the [`UsageStore`] interface and its implementations;
//! - `writer`: the writer thread: batches, the JSONL file, retention, reads.

mod prices;
mod record;
pub(crate) mod store;
mod writer;

pub use record::{ContextGuard, Entry, ModelStep, SessionUsage, ToolCall, UsageRecord};

pub(crate) use store::UsageStore;

use crate::config::AccountingConfig;
use crate::hub::HubError;
use crate::hub::store_driver::Driver;
use crate::llm::Usage;
use prices::Prices;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::time::Duration;
use writer::{Msg, Read, Sink};

/// Longest a reader waits for the writer's answer.
const READ_WAIT: Duration = Duration::from_secs(30);

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
    pub records: Vec<UsageRecord>,
    /// The `since` id for the next page: the last record's id (or, with none, an
    /// id no later record can be at or below).
    pub next: u64,
}

/// A finished model step as its caller reports it.
pub struct StepReport<'a> {
    /// The chat session (agent turns).
    pub session: Option<&'a str>,
    /// The assistant message the step wrote.
    pub message: Option<&'a str>,
    /// The step's index in its message (agent turns count on after an approval).
    pub step: u32,
    /// The token it ran under.
    pub caller: &'a str,
    /// The OAuth client of a grant.
    pub client: Option<&'a str>,
    /// The provider's configured name.
    pub provider: &'a str,
    /// The model as sent to the provider.
    pub model: &'a str,
    /// The usage the provider reported.
    pub usage: Option<Usage>,
    /// From the request to the end of the answer.
    pub latency: Duration,
}

/// An activation of the agent loop's context guard as the agent reports it.
pub struct GuardReport<'a> {
    /// The chat session.
    pub session: Option<&'a str>,
    /// The assistant message the guarded result belongs to.
    pub message: Option<&'a str>,
    /// The index of the step whose tool call returned the result.
    pub step: u32,
    /// The token the turn runs under.
    pub caller: &'a str,
    /// The provider's configured name.
    pub provider: &'a str,
    /// The model as sent to the provider.
    pub model: &'a str,
    /// What made the guard act.
    pub trigger: &'a str,
    /// What it did.
    pub outcome: &'a str,
    /// Tokens the conversation would have taken with the result.
    pub projected_tokens: u64,
    /// Tokens the conversation may take.
    pub limit_tokens: u64,
    /// Tokens that were left before the result.
    pub remaining_tokens: u64,
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

/// The sending side, owned by the hub.
pub(crate) struct UsageLog {
    /// `None` only while dropping.
    tx: Option<SyncSender<Msg>>,
    prices: Prices,
    dropped: AtomicU64,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl UsageLog {
    /// Opens the JSONL file (when configured) and starts the writer over `store`.
    pub(crate) fn start(
        store: Arc<dyn UsageStore>,
        config: &AccountingConfig,
    ) -> Result<UsageLog, AccountingError> {
        let jsonl = match &config.jsonl {
            None => None,
            Some(path) => Some(open_jsonl(path).map_err(|source| AccountingError::Jsonl {
                path: path.clone(),
                source,
            })?),
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(config.queue.max(1));
        let sink = Sink {
            store,
            driver: Driver::new().map_err(AccountingError::Writer)?,
            retention: config.retention,
            jsonl,
        };
        let writer = std::thread::Builder::new()
            .name("wasmhub-accounting".into())
            .spawn(move || writer::write_loop(rx, sink))
            .map_err(AccountingError::Writer)?;
        Ok(UsageLog {
            tx: Some(tx),
            prices: Prices::new(&config.prices),
            dropped: AtomicU64::new(0),
            writer: Some(writer),
        })
    }

    /// Queues `record` (its id is given when stored); never blocks.
    pub(crate) fn record(&self, record: UsageRecord) {
        let Some(tx) = &self.tx else { return };
        if let Err(TrySendError::Full(_)) = tx.try_send(Msg::Record(Box::new(record))) {
            let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if n == 1 || n.is_multiple_of(1000) {
                crate::warn!(
                    "accounting: the writer is behind, {n} records dropped so far (accounting.queue)"
                );
            }
        }
    }

    /// Queues the record of a model step, with its cost.
    pub(crate) fn model_step(&self, report: StepReport<'_>) {
        let usage = report.usage.as_ref();
        let cost = usage.and_then(|u| self.prices.cost(report.provider, report.model, u));
        self.record(UsageRecord {
            id: 0,
            time_ms: crate::clock::now_ms(),
            session: report.session.map(str::to_string),
            caller: report.caller.to_string(),
            client: report.client.map(str::to_string),
            entry: Entry::ModelStep(ModelStep {
                message: report.message.map(str::to_string),
                step: report.step,
                provider: report.provider.to_string(),
                model: report.model.to_string(),
                input_tokens: usage.map(|u| u.input_tokens),
                output_tokens: usage.map(|u| u.output_tokens),
                cached_input_tokens: usage.and_then(|u| u.cached_input_tokens),
                reasoning_tokens: usage.and_then(|u| u.reasoning_tokens),
                latency_ms: report.latency.as_millis() as u64,
                cost,
            }),
        });
    }

    /// Queues the record of a context guard activation.
    pub(crate) fn context_guard(&self, report: GuardReport<'_>) {
        self.record(UsageRecord {
            id: 0,
            time_ms: crate::clock::now_ms(),
            session: report.session.map(str::to_string),
            caller: report.caller.to_string(),
            client: None,
            entry: Entry::ContextGuard(ContextGuard {
                message: report.message.map(str::to_string),
                step: report.step,
                provider: report.provider.to_string(),
                model: report.model.to_string(),
                trigger: report.trigger.to_string(),
                outcome: report.outcome.to_string(),
                projected_tokens: report.projected_tokens,
                limit_tokens: report.limit_tokens,
                remaining_tokens: report.remaining_tokens,
            }),
        });
    }

    /// Drops the sums of `session` once the records queued before are stored
    /// (in order with them, so none is added back after). Never waits: with the
    /// queue full, a thread of its own waits for room.
    pub(crate) fn forget_session(&self, session: &str) {
        let Some(tx) = &self.tx else { return };
        if let Err(TrySendError::Full(msg)) = tx.try_send(Msg::Forget(session.to_string())) {
            let tx = tx.clone();
            let _ = std::thread::Builder::new()
                .name("wasmhub-accounting-forget".into())
                .spawn(move || tx.send(msg));
        }
    }

    /// Records dropped because the writer could not keep up.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Up to `limit` records after `since`, oldest first, of every writer,
    /// including every record queued here before this call. Waits for the writer:
    /// call it off the async workers.
    pub(crate) fn page(
        &self,
        since: Since,
        limit: usize,
        principal: Option<String>,
    ) -> Result<Page, HubError> {
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        self.read(Read::Page(since, limit, principal, reply), answer)
    }

    /// The sums of each of `sessions` (zero for one without records), including
    /// every record queued here before this call. Waits for the writer.
    pub(crate) fn session_usage<'s>(
        &self,
        sessions: impl IntoIterator<Item = &'s str>,
    ) -> Result<Vec<SessionUsage>, HubError> {
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        let sessions = sessions.into_iter().map(str::to_string).collect();
        self.read(Read::Usage(sessions, reply), answer)
    }

    /// Sends `read` to the writer and waits for its answer.
    fn read<T>(
        &self,
        read: Read,
        answer: Receiver<Result<T, crate::storage::StorageError>>,
    ) -> Result<T, HubError> {
        let sent = self
            .tx
            .as_ref()
            .is_some_and(|tx| tx.send(Msg::Read(read)).is_ok());
        if !sent {
            return Err(HubError::WriterGone("accounting"));
        }
        match answer.recv_timeout(READ_WAIT) {
            Ok(result) => Ok(result?),
            Err(_) => Err(HubError::WriterGone("accounting")),
        }
    }
}

impl Drop for UsageLog {
    fn drop(&mut self) {
        // Closing the channel ends the writer after it stored what was queued.
        self.tx.take();
        if let Some(writer) = self.writer.take() {
            crate::hub::store_driver::finish_writer("accounting", writer);
        }
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
