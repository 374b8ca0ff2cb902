//! Accounting as a record kind of the pipeline (`hub::records`): records into an
//! [`AccountingStore`] (which gives their ids and adds them to their sessions'
//! sums) and, with their ids, onto the JSONL file (`accounting.jsonl`, a local
//! file of each process, not the store's).

use super::record::{AccountingRecord, SessionUsage};
use super::store::AccountingStore;
use super::{Page, Since};
use crate::hub::records::{Driver, RecordKind, Reply};
use std::io::Write;
use std::sync::Arc;

/// Accounting's store and JSONL file, driven by its writer thread.
pub(super) struct AccountingRecords {
    pub store: Arc<dyn AccountingStore>,
    pub jsonl: Option<std::fs::File>,
}

/// A read of accounting.
pub(super) enum Read {
    /// `GET /api/accounting`: a page of records.
    Page {
        since: Since,
        limit: usize,
        principal: Option<String>,
        reply: Reply<Page>,
    },
    /// The sums of these sessions.
    Sums {
        sessions: Vec<String>,
        reply: Reply<Vec<SessionUsage>>,
    },
}

/// Drops the sums of a session (it was deleted; its records stay).
pub(super) struct ForgetSession(pub String);

impl RecordKind for AccountingRecords {
    type Store = dyn AccountingStore;
    type Read = Read;
    type Order = ForgetSession;
    const NAME: &'static str = "accounting";
    const THREAD: &'static str = "wasmhub-accounting";

    fn store(&self) -> &Self::Store {
        &*self.store
    }

    /// With their ids, onto the JSONL file.
    fn stored(&mut self, records: &[AccountingRecord]) {
        if let Some(file) = &mut self.jsonl {
            append_jsonl(file, records);
        }
    }

    fn answer(&self, driver: &Driver, read: Read) {
        match read {
            Read::Page {
                since,
                limit,
                principal,
                reply,
            } => {
                let _ = reply.send(driver.run(self.store.page(since, limit, principal)));
            }
            Read::Sums { sessions, reply } => {
                let _ = reply.send(driver.run(self.store.session_usage(sessions)));
            }
        }
    }

    fn apply(&mut self, driver: &Driver, ForgetSession(session): ForgetSession) {
        if let Err(e) = driver.run(self.store.forget_session(session.clone())) {
            crate::error!("accounting: cannot drop the sums of session {session}: {e}");
        }
    }
}

/// Appends `stored` (with their ids) to the JSONL file in one write, not synced:
/// the store is the durable copy.
fn append_jsonl(file: &mut std::fs::File, stored: &[AccountingRecord]) {
    let mut lines = Vec::with_capacity(stored.len() * 256);
    for record in stored {
        serde_json::to_writer(&mut lines, record).expect("a record serializes");
        lines.push(b'\n');
    }
    if let Err(e) = file.write_all(&lines) {
        crate::error!("accounting: cannot append to the JSONL file: {e}");
    }
}
