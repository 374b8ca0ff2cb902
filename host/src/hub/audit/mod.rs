//! The audit log: one [`CallRecord`] per operation call (nested ones included),
//! stored through an [`AuditStore`] (`store`: the record log `calls` on the
//! embedded backend, or PostgreSQL shared by every replica).
//!
//! The audit log is a record kind of the record pipeline (`hub::records`,
//! `kind`): the call protocol's records go to its writer thread through a bounded
//! channel of `audit.queue` records, batched, trimmed to `audit.retention`
//! records (of every writer), oldest first, and read through the writer after
//! what was queued before them. A full channel does not slow calls down: the
//! record is not written, and the span of such records is stored as one summary
//! record (`unwritten`) as soon as there is room, and logged. Stored input
//! excerpts have the configured sensitive field names redacted at any depth;
//! outputs are recorded as sizes only.
//!
//! - `record`: what one record holds and its stored JSON;
//! - `store`: the [`AuditStore`] interface and its implementations;
//! - `kind`: the audit log as a record kind: its store and its reads;
//! - `unwritten`: the summary of records the writer had no room for.

mod kind;
mod record;
pub(crate) mod store;
mod unwritten;

pub use record::{CallOutcome, CallRecord};
pub(crate) use store::AuditStore;

use crate::config::AuditConfig;
use crate::hub::HubError;
use crate::hub::auth::Visible;
use crate::hub::records::{RecordKind, Records};
pub(crate) use crate::redact::redact;
use kind::{AuditRecords, Recent};
use serde_json::Value;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use unwritten::Unwritten;

/// Longest stored input excerpt, in bytes of JSON.
const EXCERPT_BYTES: usize = 1024;

/// The audit log's handle, owned by the hub.
pub(crate) struct AuditLog {
    records: Records<AuditRecords>,
    redact: Vec<String>,
    /// Records not written since the last summary was queued.
    unwritten: Mutex<Option<Unwritten>>,
    /// Whether `unwritten` holds a span: spares the lock on the hot path.
    has_unwritten: AtomicBool,
}

impl AuditLog {
    /// Starts the writer thread over `store` (which is all that can fail).
    pub(crate) fn start(store: Arc<dyn AuditStore>, config: &AuditConfig) -> std::io::Result<AuditLog> {
        Ok(AuditLog {
            records: Records::start(AuditRecords(store), config.queue, config.retention)?,
            redact: config
                .redact_fields
                .iter()
                .map(|f| f.to_ascii_lowercase())
                .collect(),
            unwritten: Mutex::new(None),
            has_unwritten: AtomicBool::new(false),
        })
    }

    /// Queues `record`; never blocks. With the queue full, the record joins the
    /// span summarised by the next summary record.
    pub(crate) fn record(&self, record: CallRecord) {
        // An earlier span's summary goes first, so the log keeps its order.
        if !self.queue_summary(false) {
            self.not_written(&record);
            return;
        }
        if let Err(std::sync::mpsc::TrySendError::Full(record)) = self.records.offer(record) {
            self.not_written(&record);
        }
    }

    fn not_written(&self, record: &CallRecord) {
        self.records.count_dropped();
        let mut unwritten = self.unwritten.lock().unwrap_or_else(|p| p.into_inner());
        match unwritten.as_mut() {
            Some(span) => span.add(record),
            None => *unwritten = Some(Unwritten::starting(record)),
        }
        self.has_unwritten.store(true, Ordering::Release);
    }

    /// Queues the summary of the records not written, if any (waiting for room
    /// when `wait`); whether nothing is left to summarise.
    fn queue_summary(&self, wait: bool) -> bool {
        if !self.has_unwritten.load(Ordering::Acquire) {
            return true;
        }
        let mut unwritten = self.unwritten.lock().unwrap_or_else(|p| p.into_inner());
        let Some(span) = unwritten.as_ref() else {
            return true;
        };
        let summary = span.summary();
        let sent = if wait {
            self.records.send(summary)
        } else {
            self.records.offer(summary).is_ok()
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
        // Measured without building the text: nearly every input fits.
        if crate::json::encoded_len(&redacted) <= EXCERPT_BYTES {
            return redacted;
        }
        let text = serde_json::to_string(&redacted).expect("a JSON value always serializes");
        let mut cut = EXCERPT_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        Value::String(format!("{}…", &text[..cut]))
    }

    /// Records not written because the writer could not keep up.
    pub(crate) fn dropped(&self) -> u64 {
        self.records.dropped()
    }

    /// The newest `limit` records of every writer that `visible` admits, newest
    /// first, including every record queued here before this call. Waits for the
    /// writer: call it off the async workers.
    pub(crate) fn recent(&self, limit: usize, visible: &Visible) -> Result<Vec<CallRecord>, HubError> {
        if *visible == Visible::Nothing {
            return Ok(Vec::new());
        }
        if !self.queue_summary(true) {
            return Err(HubError::WriterGone(AuditRecords::NAME));
        }
        let principal = visible.principal().map(str::to_string);
        self.records.read(|reply| Recent {
            limit,
            principal,
            reply,
        })
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        // The last span's summary is stored too; dropping `records` then waits
        // for the writer to store what was queued.
        self.queue_summary(true);
    }
}

#[cfg(test)]
mod tests;
