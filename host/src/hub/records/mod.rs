//! The record pipeline: how the hub keeps the records of what it did without
//! slowing it down. Each kind of record (the audit log's call records,
//! `hub::audit`; accounting's records, `hub::accounting`) is a [`RecordKind`]:
//! its record shape, its store and its reads. The pipeline does the rest, the
//! same for every kind:
//!
//! - recording never waits: records go through a bounded channel ([`Records`],
//!   `queue`) to the kind's writer thread; with the channel full the record is not
//!   written and counted (each kind decides what else it does about it);
//! - the writer (`writer`) lets records gather, appends each batch to the store,
//!   trims the store to the kind's retention, and does each kind's ordered work;
//!   every kind's store appends and trims alike (`store`: [`RecordStore`]);
//! - reads go through the writer too, after what was queued before them, so a
//!   client that saw a call end reads its records, and the writer thread is the
//!   only place the store's futures run (`driver`);
//! - a call's records (`call`): the drop guard that writes one call's metrics,
//!   accounting record and audit record, however the call ends.
//!
//! Where records are stored is each kind's store: on the embedded backend the
//! record logs (`storage::log`, segment files under `<data_dir>/logs/`), on
//! PostgreSQL its tables, shared by every replica.

mod call;
mod driver;
mod kind;
mod queue;
mod store;
mod writer;

pub(in crate::hub) use call::{CallOrigin, CallRecorder};
pub(crate) use driver::Driver;
pub(crate) use kind::RecordKind;
pub(crate) use queue::{Records, Reply};
pub(crate) use store::RecordStore;
#[cfg(feature = "postgres")]
pub(crate) use store::SinceTrim;
