//! Append-only logs of records in segment files: where the embedded backend keeps
//! the two stores that grow with traffic, the audit log and the accounting
//! records. Only what locates each segment is in memory; the records stay on disk
//! until they are read.
//!
//! They used to be sled tables, but sled holds about as much memory as it
//! stores (32 MB for 100,000 records of 250 bytes, whatever its cache size), so a
//! busy hub's resident memory grew with its retention. A log lives in
//! `<data_dir>/logs/<name>/`:
//! - a segment is a file of JSON lines, one record per line, named by the
//!   sequence number of its first record (`00000000000000004096.jsonl`);
//! - a batch is one write to the newest segment, then `fdatasync`; a new segment
//!   starts once the newest holds [`SEGMENT_RECORDS`] records or [`SEGMENT_BYTES`];
//! - trimming deletes whole old segments and rewrites the one that straddles the
//!   limit (a temporary file renamed over a new name);
//! - opening cuts a torn last line (a crash mid-write), and removes temporary
//!   files and a segment whose rewrite a crash interrupted.
//!
//! One process writes a log (the sled database beside it is locked to one
//! process); callers serialize access (`&mut self`).

mod migrate;
mod open;
mod segment;
#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) use migrate::BlockKey;
pub(crate) use segment::Segment;

use super::{Storage, StorageError};
use segment::io_error;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::marker::PhantomData;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

/// A new segment starts after this many records...
pub(crate) const SEGMENT_RECORDS: usize = 4096;
/// ...or this many bytes.
pub(crate) const SEGMENT_BYTES: u64 = 4 << 20;

/// A record a log stores.
pub(crate) trait LogRecord: Serialize + DeserializeOwned {
    /// The increasing id readers look records up by (`Segment::last_id`); 0 for
    /// records that have none.
    fn log_id(&self) -> u64 {
        0
    }
}

/// The record log called `name` in `storage`'s `logs/<name>/`; the records an
/// earlier version kept in the sled table of that name are moved into it first.
pub(crate) fn open<T: LogRecord>(storage: &Storage, name: &str) -> Result<RecordLog<T>, StorageError> {
    let dir = storage.log_dir(name);
    migrate::migrate_table::<T>(storage, name, &dir)?;
    let mut log = RecordLog::open(&dir)?;
    log._storage = Some(storage.clone());
    Ok(log)
}

/// An append-only log of `T` in the folder `dir`.
pub(crate) struct RecordLog<T> {
    dir: PathBuf,
    /// Oldest first.
    segments: VecDeque<Segment>,
    records: usize,
    /// The newest segment, open for appending once something was appended.
    newest: Option<File>,
    /// Keeps a temporary database's folder, where the log lives, from going first.
    _storage: Option<Storage>,
    _records: PhantomData<fn() -> T>,
}

impl<T: LogRecord> RecordLog<T> {
    /// Opens (creating if needed) the log in `dir`, repairing what a crash left.
    pub(crate) fn open(dir: &Path) -> Result<RecordLog<T>, StorageError> {
        std::fs::create_dir_all(dir).map_err(|source| StorageError::CreateDir {
            path: dir.to_owned(),
            source,
        })?;
        let segments = open::scan::<T>(dir)?;
        Ok(RecordLog {
            dir: dir.to_owned(),
            records: segments.iter().map(|s| s.records).sum(),
            segments,
            newest: None,
            _storage: None,
            _records: PhantomData,
        })
    }

    /// How many records it holds.
    pub(crate) fn len(&self) -> usize {
        self.records
    }

    /// Its segments, oldest first.
    pub(crate) fn segments(&self) -> &VecDeque<Segment> {
        &self.segments
    }

    /// Hands the records of `segment` to `visit`, oldest first, each decoded
    /// only when its turn comes, until `visit` breaks; answers whether it did.
    pub(crate) fn visit(
        &self,
        segment: &Segment,
        mut visit: impl FnMut(T) -> ControlFlow<()>,
    ) -> Result<ControlFlow<()>, StorageError> {
        let (path, bytes) = self.read(segment)?;
        for line in segment::lines(&bytes) {
            if visit(segment::decode(&path, line)?).is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// The file of `segment` and its bytes.
    fn read(&self, segment: &Segment) -> Result<(PathBuf, Vec<u8>), StorageError> {
        let path = Segment::path(&self.dir, segment.first);
        let bytes = segment::read(&path)?;
        Ok((path, bytes))
    }

    /// The `log_id` of the newest record.
    pub(crate) fn last_id(&self) -> Option<u64> {
        self.segments.back().map(|s| s.last_id)
    }

    /// The newest `limit` records, newest first.
    pub(crate) fn newest(&self, limit: usize) -> Result<Vec<T>, StorageError> {
        let mut out = Vec::with_capacity(limit.min(1024));
        for segment in self.segments.iter().rev() {
            if out.len() >= limit {
                break;
            }
            // Only the lines wanted are decoded (a segment holds thousands).
            let (path, bytes) = self.read(segment)?;
            for line in segment::lines(&bytes).rev().take(limit - out.len()) {
                out.push(segment::decode(&path, line)?);
            }
        }
        Ok(out)
    }

    /// The newest `limit` records that `keep` accepts, newest first; every record
    /// is decoded until `limit` are found.
    pub(crate) fn newest_where(
        &self,
        limit: usize,
        mut keep: impl FnMut(&T) -> bool,
    ) -> Result<Vec<T>, StorageError> {
        let mut out = Vec::with_capacity(limit.min(1024));
        for segment in self.segments.iter().rev() {
            if out.len() >= limit {
                break;
            }
            let (path, bytes) = self.read(segment)?;
            for line in segment::lines(&bytes).rev() {
                let record = segment::decode(&path, line)?;
                if keep(&record) {
                    out.push(record);
                    if out.len() >= limit {
                        break;
                    }
                }
            }
        }
        Ok(out)
    }

    /// Appends `batch` (written at `now_ms`) and makes it durable.
    pub(crate) fn append(&mut self, batch: &[T], now_ms: u64) -> Result<(), StorageError> {
        let Some(last) = batch.last() else {
            return Ok(());
        };
        let mut lines = Vec::with_capacity(batch.len() * 256);
        segment::encode(batch, &mut lines)?;
        let full = self
            .segments
            .back()
            .is_none_or(|s| s.records >= SEGMENT_RECORDS || s.bytes >= SEGMENT_BYTES);
        if full {
            self.start_segment(now_ms)?;
        }
        let segment = self.segments.back_mut().expect("a segment was started");
        let path = Segment::path(&self.dir, segment.first);
        let file = match &mut self.newest {
            Some(file) => file,
            none => none.insert(
                OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .map_err(io_error(&path, "open a log segment"))?,
            ),
        };
        if let Err(e) = file.write_all(&lines).and_then(|()| file.sync_data()) {
            // Cut what part of the batch was written, so the next line starts clean.
            let _ = file.set_len(segment.bytes);
            return Err(io_error(&path, "append to a log segment")(e));
        }
        segment.records += batch.len();
        segment.bytes += lines.len() as u64;
        segment.last_ms = segment.last_ms.max(now_ms);
        segment.last_id = last.log_id();
        self.records += batch.len();
        Ok(())
    }

    /// Starts an empty newest segment after the others.
    fn start_segment(&mut self, now_ms: u64) -> Result<(), StorageError> {
        let (first, last_ms, last_id) = self
            .segments
            .back()
            .map_or((0, now_ms, 0), |s| (s.end(), s.last_ms.max(now_ms), s.last_id));
        let path = Segment::path(&self.dir, first);
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(&path)
            .map_err(io_error(&path, "create a log segment"))?;
        segment::sync_dir(&self.dir)?;
        self.newest = Some(file);
        self.segments.push_back(Segment {
            first,
            records: 0,
            bytes: 0,
            last_ms,
            last_id,
        });
        Ok(())
    }

    /// Once more than `keep + slack` records are stored (or any, with `keep` 0),
    /// removes the oldest until `keep` remain: whole segments, then the oldest
    /// part of the segment that straddles the limit. `slack` spares rewriting a
    /// segment after every batch (the stores' `trim` contract).
    pub(crate) fn trim(&mut self, keep: usize, slack: usize) -> Result<(), StorageError> {
        let over = self.records > keep.saturating_add(slack) || (keep == 0 && self.records > 0);
        if !over {
            return Ok(());
        }
        let mut excess = self.records.saturating_sub(keep);
        while let Some(oldest) = self.segments.front().copied()
            && excess > 0
        {
            if oldest.records > excess {
                self.cut_front(oldest, excess)?;
                self.records -= excess;
                break;
            }
            if self.segments.len() == 1 {
                self.newest = None;
            }
            let path = Segment::path(&self.dir, oldest.first);
            std::fs::remove_file(&path).map_err(io_error(&path, "remove a log segment"))?;
            self.segments.pop_front();
            self.records -= oldest.records;
            excess -= oldest.records;
        }
        segment::sync_dir(&self.dir)
    }

    /// Rewrites `oldest` without its first `cut` records, under the sequence
    /// number of the first it keeps.
    fn cut_front(&mut self, oldest: Segment, cut: usize) -> Result<(), StorageError> {
        let (path, bytes) = self.read(&oldest)?;
        let kept: Vec<&[u8]> = segment::lines(&bytes).skip(cut).collect();
        let mut out = Vec::with_capacity(bytes.len());
        for line in &kept {
            out.extend_from_slice(line);
            out.push(b'\n');
        }
        let trimmed = Segment {
            first: oldest.first + cut as u64,
            records: kept.len(),
            bytes: out.len() as u64,
            ..oldest
        };
        let target = Segment::path(&self.dir, trimmed.first);
        let temporary = target.with_extension("tmp");
        std::fs::write(&temporary, &out)
            .and_then(|()| File::open(&temporary)?.sync_all())
            .map_err(io_error(&temporary, "write a trimmed log segment"))?;
        std::fs::rename(&temporary, &target).map_err(io_error(&target, "rename a trimmed log segment"))?;
        segment::sync_dir(&self.dir)?;
        // From here a crash leaves both; opening removes the older (`open::scan`).
        std::fs::remove_file(&path).map_err(io_error(&path, "remove a trimmed log segment"))?;
        if self.segments.len() == 1 {
            self.newest = None;
        }
        *self.segments.front_mut().expect("oldest is stored") = trimmed;
        Ok(())
    }
}
