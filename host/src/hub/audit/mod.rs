//! The audit log: one [`CallRecord`] per operation call (nested ones included),
//! stored through an [`AuditStore`] (`store`: the record log `calls`, segment
//! files beside the sled database, or PostgreSQL shared by every replica).
//!
//! Records are written off the hot path: the call protocol hands them to a writer
//! thread through a bounded channel of `audit.queue` records. A full channel does
//! not slow calls down: the record is not written, and the span of such records is
//! stored as one summary record (`unwritten`) as soon as there is room, and logged.
//! The writer lets records gather for
//! [`GATHER`], appends each batch to the store, and trims the store to
//! `audit.retention` records (of every writer), oldest first. Reads go through the
//! writer too, after what was queued before them, so the writer thread is the only
//! place the store's futures run (`super::store_driver`). Stored input excerpts have the
//! configured sensitive field names redacted at any depth; outputs are recorded as
//! sizes only.
//!
//! - `record`: what one record holds and its stored JSON;
//! - `store`: the [`AuditStore`] interface and its implementations;
//! - `unwritten`: the summary of records the writer had no room for.

mod record;
pub(crate) mod store;
mod unwritten;

pub use record::{CallOutcome, CallRecord};
pub(crate) use store::AuditStore;

use super::store_driver::Driver;
use crate::config::AuditConfig;
use crate::hub::HubError;
use crate::storage::StorageError;
use serde_json::Value;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::time::Duration;
use unwritten::Unwritten;

/// Most records stored in one block.
const BATCH: usize = 512;
/// How long the writer lets records gather before it stores them. Sleeping instead
/// of waiting on the channel means a busy hub's calls never wake the writer (a
/// futex syscall each), and blocks hold many records.
const GATHER: Duration = Duration::from_millis(20);
/// Longest stored input excerpt, in bytes of JSON.
const EXCERPT_BYTES: usize = 1024;
const REDACTED: &str = "[redacted]";
/// Longest a reader waits for the writer's answer.
const READ_WAIT: Duration = Duration::from_secs(30);

/// A read's answer.
type Reply = SyncSender<Result<Vec<CallRecord>, StorageError>>;

enum Msg {
    Record(Box<CallRecord>),
    /// Answered, once everything sent before it is stored, with the newest
    /// records (at most this many; one principal's when it names one).
    Recent(usize, Option<String>, Reply),
}

/// The sending side, owned by the hub.
pub(crate) struct AuditLog {
    /// `None` only while dropping.
    tx: Option<SyncSender<Msg>>,
    redact: Vec<String>,
    dropped: AtomicU64,
    /// Records not written since the last summary was queued.
    unwritten: Mutex<Option<Unwritten>>,
    /// Whether `unwritten` holds a span: spares the lock on the hot path.
    has_unwritten: AtomicBool,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl AuditLog {
    /// Starts the writer thread over `store` (which is all that can fail).
    pub(crate) fn start(store: Arc<dyn AuditStore>, config: &AuditConfig) -> std::io::Result<AuditLog> {
        let (tx, rx) = std::sync::mpsc::sync_channel(config.queue.max(1));
        let retention = config.retention;
        let driver = Driver::new()?;
        let writer = std::thread::Builder::new()
            .name("wasmhub-audit".into())
            .spawn(move || write_loop(rx, store, driver, retention))?;
        Ok(AuditLog {
            tx: Some(tx),
            redact: config
                .redact_fields
                .iter()
                .map(|f| f.to_ascii_lowercase())
                .collect(),
            dropped: AtomicU64::new(0),
            unwritten: Mutex::new(None),
            has_unwritten: AtomicBool::new(false),
            writer: Some(writer),
        })
    }

    /// Queues `record`; never blocks. With the queue full, the record joins the
    /// span summarised by the next summary record.
    pub(crate) fn record(&self, record: CallRecord) {
        let Some(tx) = &self.tx else { return };
        // An earlier span's summary goes first, so the log keeps its order.
        if !self.queue_summary(tx, false) {
            self.not_written(&record);
            return;
        }
        match tx.try_send(Msg::Record(Box::new(record))) {
            Ok(()) | Err(TrySendError::Disconnected(_)) => {}
            Err(TrySendError::Full(Msg::Record(record))) => self.not_written(&record),
            Err(TrySendError::Full(Msg::Recent(..))) => unreachable!("a record was sent"),
        }
    }

    fn not_written(&self, record: &CallRecord) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
        let mut unwritten = self.unwritten.lock().unwrap_or_else(|p| p.into_inner());
        match unwritten.as_mut() {
            Some(span) => span.add(record),
            None => *unwritten = Some(Unwritten::starting(record)),
        }
        self.has_unwritten.store(true, Ordering::Release);
    }

    /// Queues the summary of the records not written, if any (waiting for room
    /// when `wait`); whether nothing is left to summarise.
    fn queue_summary(&self, tx: &SyncSender<Msg>, wait: bool) -> bool {
        if !self.has_unwritten.load(Ordering::Acquire) {
            return true;
        }
        let mut unwritten = self.unwritten.lock().unwrap_or_else(|p| p.into_inner());
        let Some(span) = unwritten.as_ref() else {
            return true;
        };
        let summary = Msg::Record(Box::new(span.summary()));
        let sent = if wait {
            tx.send(summary).is_ok()
        } else {
            tx.try_send(summary).is_ok()
        };
        if sent {
            crate::warn!("audit log: {}", span.message());
            *unwritten = None;
            self.has_unwritten.store(false, Ordering::Release);
        }
        sent
    }

    /// The input excerpt stored for a call: sensitive fields redacted, cut to size.
    pub(crate) fn excerpt(&self, input: &Value) -> Value {
        let redacted = redact(input, &self.redact);
        let text = redacted.to_string();
        if text.len() <= EXCERPT_BYTES {
            return redacted;
        }
        let mut cut = EXCERPT_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        Value::String(format!("{}…", &text[..cut]))
    }

    /// Records not written because the writer could not keep up.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// The newest `limit` records of every writer, newest first, including every
    /// record queued here before this call. Waits for the writer: call it off the
    /// async workers.
    pub(crate) fn recent(
        &self,
        limit: usize,
        principal: Option<String>,
    ) -> Result<Vec<CallRecord>, HubError> {
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        let sent = self.tx.as_ref().is_some_and(|tx| {
            self.queue_summary(tx, true) && tx.send(Msg::Recent(limit, principal, reply)).is_ok()
        });
        if !sent {
            return Err(HubError::WriterGone("audit log"));
        }
        match answer.recv_timeout(READ_WAIT) {
            Ok(records) => Ok(records?),
            Err(_) => Err(HubError::WriterGone("audit log")),
        }
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        if let Some(tx) = &self.tx {
            self.queue_summary(tx, true);
        }
        // Closing the channel ends the writer after it stored what was queued.
        self.tx.take();
        if let Some(writer) = self.writer.take() {
            crate::hub::store_driver::finish_writer("audit log", writer);
        }
    }
}

fn write_loop(rx: Receiver<Msg>, store: Arc<dyn AuditStore>, driver: Driver, retention: usize) {
    let slack = (retention / 10).max(1);
    while let Ok(first) = rx.recv() {
        if matches!(first, Msg::Record(_)) {
            std::thread::sleep(GATHER);
        }
        let mut batch: Vec<CallRecord> = Vec::new();
        let mut reads = Vec::new();
        let mut next = Some(first);
        while let Some(msg) = next {
            match msg {
                Msg::Record(r) => batch.push(*r),
                Msg::Recent(limit, principal, reply) => reads.push((limit, principal, reply)),
            }
            next = if batch.len() < BATCH {
                rx.try_recv().ok()
            } else {
                None
            };
        }
        if !batch.is_empty() {
            let n = batch.len();
            if let Err(e) = driver.run(store.append(batch)) {
                crate::error!("audit log: cannot store {n} records: {e}");
            }
            if let Err(e) = driver.run(store.trim(retention, slack)) {
                crate::error!("audit log: cannot trim to {retention} records: {e}");
            }
        }
        for (limit, principal, reply) in reads {
            let _ = reply.send(driver.run(store.recent(limit, principal)));
        }
    }
}

/// `value` with every object field whose name is in `fields` (lowercase,
/// compared case-insensitively) replaced by `"[redacted]"`, at any depth.
pub(crate) fn redact(value: &Value, fields: &[String]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let sensitive = fields.iter().any(|f| f.eq_ignore_ascii_case(k));
                    (
                        k.clone(),
                        if sensitive {
                            Value::String(REDACTED.into())
                        } else {
                            redact(v, fields)
                        },
                    )
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| redact(v, fields)).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests;
