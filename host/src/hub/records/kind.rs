//! What a kind of record tells the pipeline ([`RecordKind`]): the shape of its
//! records, its reads, what else must happen in order with its records, and how
//! its store takes them. The audit log (`hub::audit`) and accounting
//! (`hub::accounting`) are the kinds; the queue, the writer thread, batching,
//! trimming and the order of reads are the pipeline's (`super::writer`).

use super::Driver;
use crate::storage::StorageError;

/// A kind of record and its store, owned by its writer thread; every method runs
/// there, the store's futures on `driver`.
pub(crate) trait RecordKind: Send + 'static {
    /// One record, as queued and stored.
    type Record: Send + 'static;
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

    /// Stores `batch` (never empty), in order, after everything stored before.
    fn append(&mut self, driver: &Driver, batch: Vec<Self::Record>) -> Result<(), StorageError>;

    /// Once more than `keep + slack` records are stored, removes the oldest
    /// until `keep` remain (the stores' `trim`).
    fn trim(&self, driver: &Driver, keep: usize, slack: usize) -> Result<(), StorageError>;

    /// Answers `read`.
    fn answer(&self, driver: &Driver, read: Self::Read);

    /// Does `order`; it logs its own failure (nobody waits for it).
    fn apply(&mut self, driver: &Driver, order: Self::Order);
}
