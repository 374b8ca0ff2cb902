//! The sending side of a record kind's writer ([`Records`]): a bounded channel
//! that recording never waits on, the dropped-record count, reads that wait for
//! the writer, and the shutdown that lets the writer store what was queued.

use super::kind::Record;
use super::writer::{self, Msg};
use super::{Driver, RecordKind};
use crate::hub::HubError;
use crate::storage::StorageError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::Duration;

/// Longest a reader waits for the writer's answer.
const READ_WAIT: Duration = Duration::from_secs(30);

/// Where a read's answer goes.
pub(crate) type Reply<T> = SyncSender<Result<T, StorageError>>;

/// The queue to a record kind's writer thread, owned by the kind's handle.
pub(crate) struct Records<K: RecordKind> {
    /// `None` only while dropping.
    tx: Option<SyncSender<Msg<K>>>,
    dropped: AtomicU64,
    writer: Option<JoinHandle<()>>,
}

impl<K: RecordKind> Records<K> {
    /// Starts the writer thread over `kind`, with room for `queue` records, keeping
    /// `retention` records stored.
    pub(crate) fn start(kind: K, queue: usize, retention: usize) -> std::io::Result<Records<K>> {
        let (tx, rx) = std::sync::mpsc::sync_channel(queue.max(1));
        let driver = Driver::new()?;
        let writer = std::thread::Builder::new()
            .name(K::THREAD.into())
            .spawn(move || writer::write_loop(rx, kind, driver, retention))?;
        Ok(Records {
            tx: Some(tx),
            dropped: AtomicU64::new(0),
            writer: Some(writer),
        })
    }

    /// Queues `record` without waiting; hands it back when the queue is full or
    /// the writer is gone.
    pub(crate) fn offer(&self, record: Record<K>) -> Result<(), TrySendError<Record<K>>> {
        let Some(tx) = &self.tx else {
            return Err(TrySendError::Disconnected(record));
        };
        tx.try_send(Msg::Record(Box::new(record))).map_err(|e| match e {
            TrySendError::Full(Msg::Record(r)) => TrySendError::Full(*r),
            TrySendError::Disconnected(Msg::Record(r)) => TrySendError::Disconnected(*r),
            _ => unreachable!("a record was sent"),
        })
    }

    /// Queues `record`, waiting for room; whether the writer took it.
    pub(crate) fn send(&self, record: Record<K>) -> bool {
        self.tx
            .as_ref()
            .is_some_and(|tx| tx.send(Msg::Record(Box::new(record))).is_ok())
    }

    /// Counts one record not written; the count so far.
    pub(crate) fn count_dropped(&self) -> u64 {
        self.dropped.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Records not written because the writer could not keep up.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Queues `order` in order with the records. Never waits: with the queue
    /// full, a thread of its own waits for room.
    pub(crate) fn order(&self, order: K::Order) {
        let Some(tx) = &self.tx else { return };
        if let Err(TrySendError::Full(msg)) = tx.try_send(Msg::Order(order)) {
            let tx = tx.clone();
            let _ = std::thread::Builder::new()
                .name(format!("{}-order", K::THREAD))
                .spawn(move || tx.send(msg));
        }
    }

    /// Sends the read `make` builds around its reply, once everything queued
    /// before is stored, and waits for the answer: call it off the async workers.
    pub(crate) fn read<T>(&self, make: impl FnOnce(Reply<T>) -> K::Read) -> Result<T, HubError> {
        let (reply, answer): (Reply<T>, Receiver<_>) = std::sync::mpsc::sync_channel(1);
        let sent = self
            .tx
            .as_ref()
            .is_some_and(|tx| tx.send(Msg::Read(make(reply))).is_ok());
        if !sent {
            return Err(HubError::WriterGone(K::NAME));
        }
        match answer.recv_timeout(READ_WAIT) {
            Ok(result) => Ok(result?),
            Err(_) => Err(HubError::WriterGone(K::NAME)),
        }
    }
}

impl<K: RecordKind> Drop for Records<K> {
    fn drop(&mut self) {
        // Closing the channel ends the writer after it stored what was queued.
        self.tx.take();
        if let Some(writer) = self.writer.take() {
            super::driver::finish_writer(K::NAME, writer);
        }
    }
}
