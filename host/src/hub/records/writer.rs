//! The writer thread of a record kind: lets queued records gather for
//! [`GATHER`] (unless it is behind, [`Pace`]), appends each batch (at most
//! [`BATCH`]) to the kind's store (and hands the stored records to the kind,
//! `RecordKind::stored`), trims the store to the configured retention (with a
//! tenth of slack, so it does not look after every batch), and answers reads once
//! what was queued before them is stored. It is the only place the store's futures run (`super::driver`);
//! nothing here runs on the async workers.

use super::kind::Record;
use super::{Driver, RecordKind, RecordStore};
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// Most records stored in one block: more than a busy hub queues in one
/// [`GATHER`] (900 at 45,000 calls a second), so each gather is one write and one
/// sync. At 512 it took two, and the `fdatasync`s alone were 1.3% of the hub's CPU.
const BATCH: usize = 2048;
/// How long the writer lets records gather before it stores them. Sleeping instead
/// of waiting on the channel means a busy hub's calls never wake the writer (a
/// futex syscall each), and blocks hold many records.
const GATHER: Duration = Duration::from_millis(20);

/// What the sending side (`super::queue`) puts on the channel.
pub(super) enum Msg<K: RecordKind> {
    Record(Box<Record<K>>),
    Order(K::Order),
    Read(K::Read),
}

/// Runs until the channel closes, after storing everything queued.
pub(super) fn write_loop<K: RecordKind>(rx: Receiver<Msg<K>>, mut kind: K, driver: Driver, retention: usize) {
    let slack = (retention / 10).max(1);
    let mut pace = Pace::default();
    while let Ok(first) = rx.recv() {
        if pace.gathers_before(matches!(first, Msg::Record(_))) {
            std::thread::sleep(GATHER);
        }
        let mut batch: Vec<Record<K>> = Vec::new();
        let mut reads = Vec::new();
        let mut next = Some(first);
        while let Some(msg) = next {
            match msg {
                Msg::Record(r) => batch.push(*r),
                Msg::Order(order) => {
                    // The records queued before it may be what it works on: store them first.
                    append(&mut kind, &driver, std::mem::take(&mut batch));
                    kind.apply(&driver, order);
                }
                Msg::Read(read) => reads.push(read),
            }
            next = if batch.len() < BATCH {
                rx.try_recv().ok()
            } else {
                None
            };
        }
        pace.stored(batch.len());
        if !batch.is_empty() {
            append(&mut kind, &driver, batch);
            if let Err(e) = driver.run(kind.store().trim(retention, slack)) {
                crate::error!("{}: cannot trim to {retention} records: {e}", K::NAME);
            }
        }
        for read in reads {
            kind.answer(&driver, read);
        }
    }
}

/// Whether the writer lets records gather before its next batch: only once it has
/// caught up (its last batch took everything queued). Behind, it stores the next
/// batch at once: sleeping before every batch of at most [`BATCH`] capped a writer
/// at `BATCH / GATHER` (25,600 records a second when a batch held 512), and a hub
/// answering 33k calls a second over MCP dropped 29% of its audit and accounting
/// records.
#[derive(Default)]
struct Pace {
    behind: bool,
}

impl Pace {
    /// Before a batch that starts with `first_is_record` (an order or a read is
    /// answered at once).
    fn gathers_before(&self, first_is_record: bool) -> bool {
        first_is_record && !self.behind
    }

    /// After a batch of `len` records: a full one may have left records queued.
    fn stored(&mut self, len: usize) {
        self.behind = len >= BATCH;
    }
}

/// Stores `batch`, if it holds anything; a failure is logged (the records are lost).
fn append<K: RecordKind>(kind: &mut K, driver: &Driver, batch: Vec<Record<K>>) {
    if batch.is_empty() {
        return;
    }
    let n = batch.len();
    match driver.run(kind.store().append(batch)) {
        Ok(stored) => kind.stored(&stored),
        Err(e) => crate::error!("{}: cannot store {n} records: {e}", K::NAME),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_writer_gathers_only_once_it_has_caught_up() {
        let mut pace = Pace::default();
        assert!(pace.gathers_before(true), "the first record waits for others");
        assert!(!pace.gathers_before(false), "an order or a read does not wait");
        pace.stored(BATCH);
        assert!(!pace.gathers_before(true), "behind: the next batch at once");
        pace.stored(BATCH + 1);
        assert!(!pace.gathers_before(true));
        pace.stored(BATCH - 1);
        assert!(pace.gathers_before(true), "caught up: gather again");
        pace.stored(0);
        assert!(pace.gathers_before(true));
    }
}
