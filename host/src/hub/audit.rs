//! The audit log: one [`CallRecord`] per operation call (nested ones included), in
//! the sled table `calls`, keyed by start time so the newest are the last keys.
//!
//! Records are written off the hot path: the call protocol hands them to a writer
//! thread through a bounded channel (a full channel drops the record and counts it
//! rather than slowing calls down), and the writer stores them in batches and trims
//! the table to `audit.retention`. Stored input excerpts have the configured
//! sensitive field names redacted at any depth; outputs are recorded as sizes only.

use crate::config::AuditConfig;
use crate::storage::{StorageError, Table};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::time::Duration;

/// Records waiting for the writer before new ones are dropped.
const QUEUE: usize = 8192;
/// Most records written in one sled batch.
const BATCH: usize = 512;
/// Longest stored input excerpt, in bytes of JSON.
const EXCERPT_BYTES: usize = 1024;
const REDACTED: &str = "[redacted]";

/// One call, as stored and as `GET /api/calls` shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CallRecord {
    pub id: String,
    pub tool: String,
    /// The token name the call ran under (never the secret).
    pub caller: String,
    /// The call that made this one through `host.call`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Start, in milliseconds since the Unix epoch.
    pub started_ms: u64,
    pub duration_us: u64,
    pub input_bytes: u64,
    pub output_bytes: u64,
    /// `ok` or the error code.
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The input with sensitive fields redacted, cut to about 1 KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
}

enum Msg {
    Record(Box<CallRecord>, u64),
    /// Answered once everything sent before it is stored.
    Sync(SyncSender<()>),
}

/// The sending side, owned by the hub.
pub(crate) struct AuditLog {
    /// `None` only while dropping.
    tx: Option<SyncSender<Msg>>,
    table: Table,
    redact: Vec<String>,
    seq: AtomicU64,
    dropped: AtomicU64,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl AuditLog {
    pub fn start(table: Table, config: &AuditConfig) -> Result<AuditLog, StorageError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        let retention = config.retention;
        let writer_table = table.clone();
        let writer = std::thread::Builder::new()
            .name("wasmhub-audit".into())
            .spawn(move || write_loop(rx, writer_table, retention))
            .map_err(|e| StorageError::Io(format!("cannot start the audit writer: {e}")))?;
        Ok(AuditLog {
            tx: Some(tx),
            table,
            redact: config
                .redact_fields
                .iter()
                .map(|f| f.to_ascii_lowercase())
                .collect(),
            seq: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            writer: Some(writer),
        })
    }

    /// Queues `record`; never blocks.
    pub fn record(&self, record: CallRecord) {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let Some(tx) = &self.tx else { return };
        match tx.try_send(Msg::Record(Box::new(record), seq)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                if self.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                    crate::warn!(
                        "audit log queue is full: dropping records (counted in wasmhub_audit_dropped_total)"
                    );
                }
            }
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// The input excerpt stored for a call: sensitive fields redacted, cut to size.
    pub fn excerpt(&self, input: &Value) -> Value {
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

    /// Records dropped because the writer could not keep up.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// The newest `limit` records, newest first, including every record queued
    /// before this call.
    pub fn recent(&self, limit: usize) -> Result<Vec<CallRecord>, StorageError> {
        self.sync();
        Ok(self
            .table
            .last::<CallRecord>(limit)?
            .into_iter()
            .map(|(_, r)| r)
            .collect())
    }

    /// Waits (at most a second) until the writer has stored everything queued so far.
    fn sync(&self) {
        let (ack_tx, ack_rx) = std::sync::mpsc::sync_channel(1);
        let sent = self
            .tx
            .as_ref()
            .is_some_and(|tx| tx.send(Msg::Sync(ack_tx)).is_ok());
        if sent {
            let _ = ack_rx.recv_timeout(Duration::from_secs(1));
        }
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        // Closing the channel ends the writer after it stored what was queued.
        self.tx.take();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

fn write_loop(rx: Receiver<Msg>, table: Table, retention: usize) {
    // sled's len() walks the whole tree: count once, then keep track.
    let mut stored = table.len();
    let slack = (retention / 10).max(1);
    while let Ok(first) = rx.recv() {
        let mut batch: Vec<(Vec<u8>, CallRecord)> = Vec::new();
        let mut acks = Vec::new();
        let mut next = Some(first);
        while let Some(msg) = next {
            match msg {
                Msg::Record(r, seq) => batch.push((key(r.started_ms, seq), *r)),
                Msg::Sync(ack) => acks.push(ack),
            }
            next = if batch.len() < BATCH {
                rx.try_recv().ok()
            } else {
                None
            };
        }
        if !batch.is_empty() {
            match table.put_many(&batch) {
                Ok(()) => stored += batch.len(),
                Err(e) => crate::error!("audit log: cannot store {} records: {e}", batch.len()),
            }
        }
        if stored > retention + slack || (retention == 0 && stored > 0) {
            match table.trim_oldest(retention) {
                Ok(_) => stored = retention.min(stored),
                Err(e) => crate::error!("audit log: cannot trim to {retention} records: {e}"),
            }
        }
        for ack in acks {
            let _ = ack.send(());
        }
    }
    let _ = table.flush();
}

/// Big-endian start time then sequence number: byte order is time order.
fn key(started_ms: u64, seq: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(16);
    k.extend_from_slice(&started_ms.to_be_bytes());
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// `value` with every object field whose name is in `fields` (lowercase,
/// compared case-insensitively) replaced by `"[redacted]"`, at any depth.
pub fn redact(value: &Value, fields: &[String]) -> Value {
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
mod tests {
    use super::*;
    use crate::storage::Storage;
    use serde_json::json;

    fn record(n: u64) -> CallRecord {
        CallRecord {
            id: format!("call_{n}"),
            tool: "text.slugify".into(),
            caller: "local".into(),
            parent: None,
            started_ms: 1_000 + n,
            duration_us: 5,
            input_bytes: 10,
            output_bytes: 20,
            outcome: "ok".into(),
            error: None,
            input: None,
        }
    }

    #[test]
    fn redacts_sensitive_fields_at_any_depth() {
        let fields = vec!["password".to_string(), "api_key".to_string()];
        let v = redact(
            &json!({"user": "a", "Password": "x", "nested": [{"api_key": "k", "n": 1}]}),
            &fields,
        );
        assert_eq!(
            v,
            json!({"user": "a", "Password": "[redacted]", "nested": [{"api_key": "[redacted]", "n": 1}]})
        );
    }

    #[test]
    fn records_come_back_newest_first_and_retention_is_bounded() {
        let storage = Storage::temporary().unwrap();
        let config = AuditConfig {
            retention: 20,
            redact_fields: vec!["secret".into()],
        };
        let log = AuditLog::start(storage.table("calls").unwrap(), &config).unwrap();
        for n in 0..100 {
            log.record(record(n));
        }
        let recent = log.recent(5).unwrap();
        assert_eq!(
            recent.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["call_99", "call_98", "call_97", "call_96", "call_95"]
        );
        // Trimmed back to the retention once past it by more than the slack.
        assert!(log.recent(1000).unwrap().len() <= 22);
        assert_eq!(
            log.excerpt(&json!({"secret": "s", "a": 1})),
            json!({"secret": "[redacted]", "a": 1})
        );
        let long = log.excerpt(&json!({"text": "x".repeat(5000)}));
        assert!(long.as_str().unwrap().len() <= EXCERPT_BYTES + 4);
    }
}
