//! The accounting writer thread: gathers queued records for [`GATHER`], appends
//! each batch to the store (which gives the ids and adds the session sums),
//! appends them to the JSONL file, trims the store to `accounting.retention`
//! records, and answers reads after what was queued before them. It is the only
//! place the store's futures run (`crate::hub::store_driver`); nothing here runs
//! on the async workers.

use super::record::{SessionUsage, UsageRecord};
use super::store::UsageStore;
use super::{Page, Since};
use crate::hub::store_driver::Driver;
use crate::storage::StorageError;
use std::io::Write;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender};
use std::time::Duration;

/// Most records stored in one block.
const BATCH: usize = 512;
/// How long the writer lets records gather before it stores them (as the audit
/// log's writer does: a busy hub's calls never wake it one by one).
const GATHER: Duration = Duration::from_millis(20);

/// A read, answered after every record queued before it is stored.
pub(super) enum Read {
    /// `GET /api/accounting`.
    Page(
        Since,
        usize,
        Option<String>,
        SyncSender<Result<Page, StorageError>>,
    ),
    /// The sums of these sessions.
    Usage(Vec<String>, SyncSender<Result<Vec<SessionUsage>, StorageError>>),
}

pub(super) enum Msg {
    Record(Box<UsageRecord>),
    /// Drops a session's sums (the session was deleted).
    Forget(String),
    Read(Read),
}

/// Where the writer writes.
pub(super) struct Sink {
    pub store: Arc<dyn UsageStore>,
    pub driver: Driver,
    pub retention: usize,
    pub jsonl: Option<std::fs::File>,
}

pub(super) fn write_loop(rx: Receiver<Msg>, mut sink: Sink) {
    let slack = (sink.retention / 10).max(1);
    while let Ok(first) = rx.recv() {
        if matches!(first, Msg::Record(_)) {
            std::thread::sleep(GATHER);
        }
        let mut batch: Vec<UsageRecord> = Vec::new();
        let mut reads = Vec::new();
        let mut next = Some(first);
        while let Some(msg) = next {
            match msg {
                Msg::Record(r) => batch.push(*r),
                Msg::Forget(session) => {
                    // Records of it still in this batch are summed after: store first.
                    store(&mut sink, std::mem::take(&mut batch));
                    if let Err(e) = sink.driver.run(sink.store.forget_session(session.clone())) {
                        crate::error!("accounting: cannot drop the sums of session {session}: {e}");
                    }
                }
                Msg::Read(read) => reads.push(read),
            }
            next = if batch.len() < BATCH {
                rx.try_recv().ok()
            } else {
                None
            };
        }
        if !batch.is_empty() {
            store(&mut sink, batch);
            if let Err(e) = sink.driver.run(sink.store.trim(sink.retention, slack)) {
                crate::error!("accounting: cannot trim to {} records: {e}", sink.retention);
            }
        }
        for read in reads {
            answer(&sink, read);
        }
    }
}

fn answer(sink: &Sink, read: Read) {
    match read {
        Read::Page(since, limit, principal, reply) => {
            let _ = reply.send(sink.driver.run(sink.store.page(since, limit, principal)));
        }
        Read::Usage(sessions, reply) => {
            let _ = reply.send(sink.driver.run(sink.store.session_usage(sessions)));
        }
    }
}

/// Appends `batch` to the store and, with its ids, to the JSONL file.
fn store(sink: &mut Sink, batch: Vec<UsageRecord>) {
    if batch.is_empty() {
        return;
    }
    let n = batch.len();
    let batch = match sink.driver.run(sink.store.append(batch)) {
        Ok(stored) => stored,
        Err(e) => {
            crate::error!("accounting: cannot store {n} records: {e}");
            return;
        }
    };
    if let Some(file) = &mut sink.jsonl {
        let mut lines = Vec::with_capacity(batch.len() * 256);
        for record in &batch {
            serde_json::to_writer(&mut lines, record).expect("a record serializes");
            lines.push(b'\n');
        }
        // One write per batch, not synced: the store is the durable copy.
        if let Err(e) = file.write_all(&lines) {
            crate::error!("accounting: cannot append to the JSONL file: {e}");
        }
    }
}
