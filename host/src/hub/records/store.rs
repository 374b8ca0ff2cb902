//! What every record kind's store does the same way ([`RecordStore`]): take a
//! batch after everything any writer stored before, and keep a bounded number of
//! records. Each kind's store interface (`AuditStore`, `AccountingStore`) adds
//! its reads; the writer thread (`super::writer`) is the only caller.

use crate::storage::StorageError;
#[cfg(feature = "postgres")]
use std::sync::atomic::{AtomicUsize, Ordering};

/// A record kind's storage. Several writers (replicas) may share one store.
#[async_trait::async_trait]
pub(crate) trait RecordStore: Send + Sync {
    /// One stored record.
    type Record: Send + 'static;

    /// Stores `batch` (in order) after every record any writer stored before;
    /// answers the records as stored (a store that numbers its records gives them
    /// their ids).
    async fn append(&self, batch: Vec<Self::Record>) -> Result<Vec<Self::Record>, StorageError>;

    /// Once more than `keep + slack` records are stored (all writers together),
    /// removes the oldest until between `keep` and `keep + slack` remain (exactly
    /// `keep` with `slack` 0). `slack` spares the work of trimming after every
    /// batch: an implementation may look only every `slack` appended records, and
    /// may stop short of `keep` where that is cheaper (the segment logs delete
    /// whole files).
    async fn trim(&self, keep: usize, slack: usize) -> Result<(), StorageError>;
}

/// The records one writer appended since its store last looked at the size of a
/// table it shares (PostgreSQL): such a store trims only every `slack` records.
#[cfg(feature = "postgres")]
#[derive(Debug, Default)]
pub(crate) struct SinceTrim(AtomicUsize);

#[cfg(feature = "postgres")]
impl SinceTrim {
    /// Counts `n` appended records.
    pub(crate) fn appended(&self, n: usize) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// Whether `slack` records were appended since it last said so (then it
    /// counts from 0 again).
    pub(crate) fn due(&self, slack: usize) -> bool {
        if self.0.load(Ordering::Relaxed) < slack {
            return false;
        }
        self.0.store(0, Ordering::Relaxed);
        true
    }
}
