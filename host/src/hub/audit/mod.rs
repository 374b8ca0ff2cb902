//! The audit log: one [`CallRecord`] per operation call (nested ones included), in
//! the sled table `calls`.
//!
//! Records are written off the hot path: the call protocol hands them to a writer
//! thread through a bounded channel of `audit.queue` records. A full channel does
//! not slow calls down: the record is not written, and the span of such records is
//! stored as one summary record (`unwritten`) as soon as there is room, and logged.
//! The writer lets records gather for
//! [`GATHER`], stores each batch as one block (`blocks`), and trims the table to
//! `audit.retention` records, oldest first. Stored input excerpts have the
//! configured sensitive field names redacted at any depth; outputs are recorded as
//! sizes only.
//!
//! - `record`: what one record holds and its stored JSON;
//! - `storage::blocks`: the table's layout (keys, blocks, trimming);
//! - `unwritten`: the summary of records the writer had no room for.

mod record;
mod unwritten;

pub use record::{CallOutcome, CallRecord};

use crate::config::AuditConfig;
use crate::storage::blocks::{Blocks, Stored};
use crate::storage::{StorageError, Table};
use serde_json::Value;
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

enum Msg {
    Record(Box<CallRecord>),
    /// Answered once everything sent before it is stored.
    Sync(SyncSender<()>),
}

/// The sending side, owned by the hub.
pub(crate) struct AuditLog {
    /// `None` only while dropping.
    tx: Option<SyncSender<Msg>>,
    table: Table,
    redact: Vec<String>,
    dropped: AtomicU64,
    /// Records not written since the last summary was queued.
    unwritten: Mutex<Option<Unwritten>>,
    /// Whether `unwritten` holds a span: spares the lock on the hot path.
    has_unwritten: AtomicBool,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl AuditLog {
    /// Starts the writer thread (which is all that can fail).
    pub(crate) fn start(table: Table, config: &AuditConfig) -> std::io::Result<AuditLog> {
        let (tx, rx) = std::sync::mpsc::sync_channel(config.queue.max(1));
        let retention = config.retention;
        let writer_table = table.clone();
        let writer = std::thread::Builder::new()
            .name("wasmhub-audit".into())
            .spawn(move || write_loop(rx, writer_table, retention))?;
        Ok(AuditLog {
            tx: Some(tx),
            table,
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
            Err(TrySendError::Full(Msg::Sync(_))) => unreachable!("a record was sent"),
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

    /// The newest `limit` records, newest first, including every record queued
    /// before this call.
    pub(crate) fn recent(&self, limit: usize) -> Result<Vec<CallRecord>, StorageError> {
        self.sync();
        let mut out = Vec::with_capacity(limit.min(1024));
        for item in self.table.newest_first::<Stored<CallRecord>>() {
            if out.len() >= limit {
                break;
            }
            let (_, stored) = item?;
            out.extend(stored.into_records().into_iter().rev().take(limit - out.len()));
        }
        Ok(out)
    }

    /// Waits (at most a second) until the writer has stored everything queued so
    /// far, and the summary of what was not written.
    fn sync(&self) {
        let (ack_tx, ack_rx) = std::sync::mpsc::sync_channel(1);
        let sent = self
            .tx
            .as_ref()
            .is_some_and(|tx| self.queue_summary(tx, true) && tx.send(Msg::Sync(ack_tx)).is_ok());
        if sent {
            let _ = ack_rx.recv_timeout(Duration::from_secs(1));
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
            let _ = writer.join();
        }
    }
}

fn write_loop(rx: Receiver<Msg>, table: Table, retention: usize) {
    let mut blocks = Blocks::load(&table).unwrap_or_else(|e| {
        crate::error!("audit log: cannot read the stored blocks ({e}); counting from zero");
        Blocks::default()
    });
    let slack = (retention / 10).max(1);
    while let Ok(first) = rx.recv() {
        if matches!(first, Msg::Record(_)) {
            std::thread::sleep(GATHER);
        }
        let mut batch: Vec<CallRecord> = Vec::new();
        let mut acks = Vec::new();
        let mut next = Some(first);
        while let Some(msg) = next {
            match msg {
                Msg::Record(r) => batch.push(*r),
                Msg::Sync(ack) => acks.push(ack),
            }
            next = if batch.len() < BATCH {
                rx.try_recv().ok()
            } else {
                None
            };
        }
        if !batch.is_empty() {
            let key = blocks.next_key(crate::clock::now_ms(), batch.len());
            match table.put(&key.encode(), &batch) {
                Ok(()) => blocks.stored_block(key),
                Err(e) => crate::error!("audit log: cannot store {} records: {e}", batch.len()),
            }
        }
        let over = blocks.records > retention + slack || (retention == 0 && blocks.records > 0);
        if over && let Err(e) = blocks.trim::<CallRecord>(&table, retention) {
            crate::error!("audit log: cannot trim to {retention} records: {e}");
        }
        for ack in acks {
            let _ = ack.send(());
        }
    }
    let _ = table.flush();
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
mod tests {
    use super::unwritten::SUMMARY_TOOL;
    use super::*;
    use crate::hub::error::ErrorCode;
    use crate::storage::Storage;
    use crate::storage::blocks::BlockKey;
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
            outcome: CallOutcome::Ok,
            input: None,
            approval: None,
        }
    }

    #[test]
    fn outcomes_keep_the_stored_shape() {
        let mut failed = record(1);
        failed.outcome = CallOutcome::Failed {
            code: ErrorCode::Timeout,
            message: "too slow".into(),
        };
        let stored = serde_json::to_value(&failed).unwrap();
        assert_eq!(
            (&stored["outcome"], &stored["error"]),
            (&json!("timeout"), &json!("too slow"))
        );
        let ok = serde_json::to_value(record(2)).unwrap();
        assert_eq!(ok["outcome"], "ok");
        assert!(ok.get("error").is_none(), "{ok}");
        // Records as earlier versions stored them decode unchanged.
        let old = json!({"id": "call_1", "tool": "a.b", "caller": "local", "started_ms": 1,
            "duration_us": 2, "input_bytes": 3, "output_bytes": 4, "outcome": "timeout", "error": "too slow"});
        let decoded: CallRecord = serde_json::from_value(old.clone()).unwrap();
        assert_eq!(decoded.outcome, failed.outcome);
        assert_eq!(serde_json::to_value(&decoded).unwrap(), old);
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
            ..AuditConfig::default()
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

    fn ids(records: &[CallRecord]) -> Vec<String> {
        records.iter().map(|r| r.id.clone()).collect()
    }

    #[test]
    fn trimming_cuts_whole_blocks_then_the_oldest_part_of_one() {
        let storage = Storage::temporary().unwrap();
        let table = storage.table("calls").unwrap();
        let mut blocks = Blocks::default();
        for (ms, range) in [(10, 0..3), (11, 3..7), (12, 7..9)] {
            let batch: Vec<CallRecord> = range.map(record).collect();
            let key = blocks.next_key(ms, batch.len());
            table.put(&key.encode(), &batch).unwrap();
            blocks.stored_block(key);
        }
        assert_eq!(blocks.records, 9);
        blocks.trim::<CallRecord>(&table, 5).unwrap();
        assert_eq!(blocks.records, 5);
        let stored: Vec<CallRecord> = table
            .newest_first::<Stored<CallRecord>>()
            .flat_map(|r| r.unwrap().1.into_records().into_iter().rev())
            .collect();
        assert_eq!(ids(&stored), ["call_8", "call_7", "call_6", "call_5", "call_4"]);
        // What the writer keeps in memory matches what a restart reads back.
        let reloaded = Blocks::load(&table).unwrap();
        assert_eq!(reloaded.records, 5);
        assert_eq!(
            reloaded.keys.iter().map(|(_, k)| *k).collect::<Vec<_>>(),
            blocks.keys.iter().map(|(_, k)| *k).collect::<Vec<_>>()
        );
        blocks.trim::<CallRecord>(&table, 0).unwrap();
        assert_eq!((blocks.records, table.len()), (0, 0));
    }

    #[test]
    fn block_keys_keep_write_order_when_the_clock_goes_back() {
        let mut blocks = Blocks::default();
        let first = blocks.next_key(1_000, 2);
        blocks.stored_block(first);
        let second = blocks.next_key(900, 1);
        assert!(second.encode() > first.encode());
        assert_eq!((second.ms, second.number), (1_000, 1));
        blocks.stored_block(second);
        assert_eq!(blocks.next_key(2_000, 1).number, 0);
        assert_eq!(BlockKey::decode(&second.encode()), Some(second));
        assert_eq!(BlockKey::decode(b"short"), None);
    }

    #[test]
    fn records_stored_one_per_key_by_earlier_versions_are_read_counted_and_trimmed() {
        let storage = Storage::temporary().unwrap();
        let table = storage.table("calls").unwrap();
        for n in 0..3u64 {
            let mut key = (1_000 + n).to_be_bytes().to_vec();
            key.extend_from_slice(&n.to_be_bytes());
            table.put(&key, &record(n)).unwrap();
        }
        let config = AuditConfig {
            retention: 3,
            redact_fields: Vec::new(),
            ..AuditConfig::default()
        };
        let log = AuditLog::start(table, &config).unwrap();
        log.record(record(3));
        assert_eq!(
            ids(&log.recent(10).unwrap()),
            ["call_3", "call_2", "call_1", "call_0"]
        );
        // Past retention plus slack: the oldest legacy records go first.
        log.record(record(4));
        assert_eq!(ids(&log.recent(10).unwrap()), ["call_4", "call_3", "call_2"]);
    }

    #[test]
    fn records_the_writer_has_no_room_for_are_summarised_not_lost() {
        let storage = Storage::temporary().unwrap();
        let config = AuditConfig {
            queue: 1,
            ..AuditConfig::default()
        };
        let log = AuditLog::start(storage.table("calls").unwrap(), &config).unwrap();
        // The writer gathers for GATHER after the first record: a one-record queue
        // is full long before 200 records are sent.
        for n in 0..200 {
            log.record(record(n));
        }
        assert!(log.dropped() > 0, "nothing was dropped");
        // What GET /api/calls reads (Hub::calls).
        let recent = log.recent(1000).unwrap();
        let summaries: Vec<&CallRecord> = recent.iter().filter(|r| r.tool == SUMMARY_TOOL).collect();
        let not_written: u64 = summaries
            .iter()
            .map(|r| r.input.as_ref().unwrap()["not_written"].as_u64().unwrap())
            .sum();
        assert_eq!(not_written, log.dropped());
        assert_eq!(recent.len() as u64 - summaries.len() as u64 + not_written, 200);
        let CallOutcome::Failed { message, .. } = &summaries[0].outcome else {
            panic!("{:?}", summaries[0])
        };
        let first = summaries[0].input.as_ref().unwrap()["first_call"]
            .as_str()
            .unwrap();
        assert!(
            message.contains(" records not written, calls call_") && message.contains(first),
            "{message}"
        );
    }
}
