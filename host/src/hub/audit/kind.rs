//! The audit log as a record kind of the pipeline (`hub::records`): call
//! records into an [`AuditStore`], read newest first.

use super::{AuditStore, CallRecord};
use crate::hub::records::{Driver, RecordKind, Reply};
use std::convert::Infallible;
use std::sync::Arc;

/// The audit log's store, driven by its writer thread.
pub(super) struct AuditRecords(pub Arc<dyn AuditStore>);

/// The newest records (at most `limit`; one principal's when it names one).
pub(super) struct Recent {
    pub limit: usize,
    pub principal: Option<String>,
    pub reply: Reply<Vec<CallRecord>>,
}

impl RecordKind for AuditRecords {
    type Store = dyn AuditStore;
    type Read = Recent;
    /// Nothing but records and reads.
    type Order = Infallible;
    const NAME: &'static str = "audit log";
    const THREAD: &'static str = "wasmhub-audit";

    fn store(&self) -> &Self::Store {
        &*self.0
    }

    fn answer(&self, driver: &Driver, read: Recent) {
        let _ = read
            .reply
            .send(driver.run(self.0.recent(read.limit, read.principal)));
    }

    fn apply(&mut self, _: &Driver, order: Infallible) {
        match order {}
    }
}
