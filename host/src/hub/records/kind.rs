//! What a kind of record tells the pipeline ([`RecordKind`]): its store (and so
//! the shape of its records), its reads, what else must happen in order with its
//! records, and what else happens to them once stored. The audit log
//! (`hub::audit`) and accounting (`hub::accounting`) are the kinds; the queue,
//! the writer thread, batching, storing, trimming and the order of reads are the
//! pipeline's (`super::writer`).

use super::{Driver, RecordStore};

/// A kind of record with its store, owned by its writer thread; every method
/// runs there, the store's futures on `driver`.
pub(crate) trait RecordKind: Send + 'static {
    /// Where the records go; its `Record` is the kind's record.
    type Store: RecordStore + ?Sized;
    /// A read with where its answer goes, answered once every record queued
    /// before it is stored.
    type Read: Send + 'static;
    /// Work that must happen in order with the records (after every record queued
    /// before it is stored, before any queued after).
    type Order: Send + 'static;
    /// The name in the hub log and in `HubError::WriterGone`.
    const NAME: &'static str;
    /// The writer thread's name.
    const THREAD: &'static str;

    /// The kind's store.
    fn store(&self) -> &Self::Store;

    /// What else happens to `records` once the store has them (as stored, ids
    /// given); nothing unless the kind says.
    fn stored(&mut self, _records: &[Record<Self>]) {}

    /// Answers `read`.
    fn answer(&self, driver: &Driver, read: Self::Read);

    /// Does `order`; it logs its own failure (nobody waits for it).
    fn apply(&mut self, driver: &Driver, order: Self::Order);
}

/// The record of kind `K`.
pub(crate) type Record<K> = <<K as RecordKind>::Store as RecordStore>::Record;
