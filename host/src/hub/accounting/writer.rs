//! The accounting writer thread: gathers queued records for [`GATHER`], gives
//! them their ids, stores each batch as one block (`storage::blocks`), adds them
//! to their sessions' sums, appends them to the JSONL file, and trims the table to
//! `accounting.retention` records. Nothing here runs on the async workers.

use super::record::{SessionUsage, UsageRecord};
use crate::storage::Table;
use crate::storage::blocks::{Blocks, Stored};
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::mpsc::{Receiver, SyncSender};
use std::time::Duration;

/// Most records stored in one block.
const BATCH: usize = 512;
/// How long the writer lets records gather before it stores them (as the audit
/// log's writer does: a busy hub's calls never wake it one by one).
const GATHER: Duration = Duration::from_millis(20);

pub(super) enum Msg {
    Record(Box<UsageRecord>),
    /// Drops a session's sums (the session was deleted).
    Forget(String),
    /// Answered once everything sent before it is stored.
    Sync(SyncSender<()>),
}

/// Where the writer writes.
pub(super) struct Sink {
    pub records: Table,
    pub sessions: Table,
    pub retention: usize,
    pub jsonl: Option<std::fs::File>,
}

pub(super) fn write_loop(rx: Receiver<Msg>, mut sink: Sink) {
    let mut blocks = Blocks::load(&sink.records).unwrap_or_else(|e| {
        crate::error!("accounting: cannot read the stored blocks ({e}); counting from zero");
        Blocks::default()
    });
    let mut next_id = last_id(&sink.records).map_or(1, |id| id + 1);
    let slack = (sink.retention / 10).max(1);
    while let Ok(first) = rx.recv() {
        if matches!(first, Msg::Record(_)) {
            std::thread::sleep(GATHER);
        }
        let mut batch: Vec<UsageRecord> = Vec::new();
        let mut acks = Vec::new();
        let mut next = Some(first);
        while let Some(msg) = next {
            match msg {
                Msg::Record(mut r) => {
                    r.id = next_id;
                    next_id += 1;
                    batch.push(*r);
                }
                Msg::Forget(session) => {
                    // Records of it still in this batch are summed after: store first.
                    store(&mut sink, &mut blocks, std::mem::take(&mut batch));
                    if let Err(e) = sink.sessions.remove(session.as_bytes()) {
                        crate::error!("accounting: cannot drop the sums of session {session}: {e}");
                    }
                }
                Msg::Sync(ack) => acks.push(ack),
            }
            next = if batch.len() < BATCH {
                rx.try_recv().ok()
            } else {
                None
            };
        }
        store(&mut sink, &mut blocks, batch);
        let over = blocks.records > sink.retention + slack || (sink.retention == 0 && blocks.records > 0);
        if over && let Err(e) = blocks.trim::<UsageRecord>(&sink.records, sink.retention) {
            crate::error!("accounting: cannot trim to {} records: {e}", sink.retention);
        }
        for ack in acks {
            let _ = ack.send(());
        }
    }
    let _ = sink.records.flush();
}

/// Stores `batch` as one block, adds it to its sessions' sums, appends it to the
/// JSONL file.
fn store(sink: &mut Sink, blocks: &mut Blocks, batch: Vec<UsageRecord>) {
    if batch.is_empty() {
        return;
    }
    let key = blocks.next_key(crate::clock::now_ms(), batch.len());
    match sink.records.put(&key.encode(), &batch) {
        Ok(()) => blocks.stored_block(key),
        Err(e) => crate::error!("accounting: cannot store {} records: {e}", batch.len()),
    }
    if let Err(e) = add_to_sessions(&sink.sessions, &batch) {
        crate::error!("accounting: cannot update session sums: {e}");
    }
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

fn add_to_sessions(sessions: &Table, batch: &[UsageRecord]) -> Result<(), crate::storage::StorageError> {
    let mut sums: BTreeMap<&str, SessionUsage> = BTreeMap::new();
    for record in batch {
        let Some(session) = record.session.as_deref() else {
            continue;
        };
        if !sums.contains_key(session) {
            let stored = sessions
                .get::<SessionUsage>(session.as_bytes())?
                .unwrap_or_default();
            sums.insert(session, stored);
        }
        sums.get_mut(session).expect("inserted above").add(&record.entry);
    }
    let items: Vec<(Vec<u8>, SessionUsage)> = sums
        .into_iter()
        .map(|(s, u)| (s.as_bytes().to_vec(), u))
        .collect();
    sessions.put_many(&items)
}

/// The id of the newest stored record.
fn last_id(records: &Table) -> Option<u64> {
    let (_, newest) = records.newest_first::<Stored<UsageRecord>>().next()?.ok()?;
    newest.into_records().last().map(|r| r.id)
}
