//! Moving a log that earlier versions kept in a sled table into its segment
//! files, once, when it is first opened.
//!
//! The table's layout: blocks of records under ordered keys,
//! `[written ms][block number]` (u64s) then `[records]` (u32), all big-endian,
//! each value the block's records as a JSON array; 16-byte keys holding one
//! record object come from still earlier versions.

use super::segment::{self, Segment, io_error};
use super::{LogRecord, RecordLog, SEGMENT_RECORDS};
use crate::storage::{Storage, StorageError};
use serde::de::DeserializeOwned;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

/// A stored value: a block, or one record from an earlier version.
#[derive(serde::Deserialize)]
#[serde(untagged)]
#[serde(bound = "T: DeserializeOwned")]
enum Stored<T> {
    Block(Vec<T>),
    One(Box<T>),
}

impl<T> Stored<T> {
    fn into_records(self) -> Vec<T> {
        match self {
            Stored::Block(records) => records,
            Stored::One(record) => vec![*record],
        }
    }
}

/// Where a block sat and how many records it held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockKey {
    pub(crate) ms: u64,
    pub(crate) number: u64,
    pub(crate) records: u32,
}

impl BlockKey {
    /// The key as the table stored it (tests write old tables with it).
    #[cfg(test)]
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut k = Vec::with_capacity(20);
        k.extend_from_slice(&self.ms.to_be_bytes());
        k.extend_from_slice(&self.number.to_be_bytes());
        k.extend_from_slice(&self.records.to_be_bytes());
        k
    }

    /// Reads a block key, or an earlier version's `[started ms][sequence]` key of
    /// one record.
    pub(crate) fn decode(k: &[u8]) -> Option<BlockKey> {
        let u64_at = |i: usize| Some(u64::from_be_bytes(k.get(i..i + 8)?.try_into().ok()?));
        let records = match k.len() {
            16 => 1,
            20 => u32::from_be_bytes(k[16..20].try_into().ok()?),
            _ => return None,
        };
        Some(BlockKey {
            ms: u64_at(0)?,
            number: u64_at(8)?,
            records,
        })
    }
}

/// Moves the records of sled table `table`, if `storage` has it, into the log
/// in `dir`, then drops the table. A first move builds the log beside `dir` and
/// renames it into place, so a crash leaves the table whole and the move starts
/// over. A table found beside an existing log (an earlier version run on this
/// data directory since, or a crash between the rename and the drop) is appended
/// to the log: records may repeat, none is lost.
pub(crate) fn migrate_table<T: LogRecord>(
    storage: &Storage,
    table: &str,
    dir: &Path,
) -> Result<(), StorageError> {
    if !storage.has_table(table) {
        return Ok(());
    }
    if dir.exists() {
        let moved = copy::<T>(storage, table, dir)?;
        storage.drop_table(table)?;
        if moved > 0 {
            crate::warn!(
                "store: table {table} held {moved} records written after its log {} was made; appended them to it",
                dir.display()
            );
        }
        return Ok(());
    }
    let staging = dir.with_extension("migrating");
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(io_error(&staging, "remove an unfinished log move"))?;
    }
    let moved = copy::<T>(storage, table, &staging)?;
    std::fs::rename(&staging, dir).map_err(io_error(dir, "move a log into place"))?;
    if let Some(parent) = dir.parent() {
        segment::sync_dir(parent)?;
    }
    storage.drop_table(table)?;
    crate::info!(
        "store: moved {moved} records of table {table} to {}",
        dir.display()
    );
    Ok(())
}

/// Appends every record of `table` to the log in `dir`, a segment at a time;
/// answers how many.
fn copy<T: LogRecord>(storage: &Storage, table: &str, dir: &Path) -> Result<usize, StorageError> {
    let source = storage.table(table)?;
    let mut log = RecordLog::<T>::open(dir)?;
    let before = log.len();
    // Segments of a log that already existed stay as they are, but its newest
    // may take the first records copied.
    let untouched = log.segments().len().saturating_sub(1);
    let (mut pending, mut pending_ms) = (Vec::new(), 0);
    for raw in source.keys()? {
        let Some(key) = BlockKey::decode(&raw) else {
            crate::warn!("{table}: ignoring a stored key of {} bytes", raw.len());
            continue;
        };
        if let Some(stored) = source.get::<Stored<T>>(&raw)? {
            pending.extend(stored.into_records());
            pending_ms = pending_ms.max(key.ms);
        }
        if pending.len() >= SEGMENT_RECORDS {
            log.append(&pending, pending_ms)?;
            pending.clear();
        }
    }
    log.append(&pending, pending_ms)?;
    // The files' times are when their records were written, not now: readers
    // that look records up by time skip segments by them (`Segment::last_ms`).
    for s in log.segments().iter().skip(untouched) {
        let path = Segment::path(dir, s.first);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_modified(UNIX_EPOCH + Duration::from_millis(s.last_ms)))
            .map_err(io_error(&path, "set a moved log segment's time"))?;
    }
    Ok(log.len() - before)
}
