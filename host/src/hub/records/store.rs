//! What every record kind's store does the same way ([`RecordStore`]): take a
//! batch after everything any writer stored before, and keep a bounded number of
//! records. Each kind's store interface (`AuditStore`, `AccountingStore`) adds
//! its reads; the writer thread (`super::writer`) is the only caller.

use crate::storage::StorageError;

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
    /// removes the oldest until `keep` remain. `slack` spares the work of trimming
    /// after every batch; an implementation may look only every `slack` appended
    /// records (with `slack` 0 it always looks).
    async fn trim(&self, keep: usize, slack: usize) -> Result<(), StorageError>;
}
