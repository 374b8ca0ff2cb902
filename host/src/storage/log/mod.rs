//! Append-only logs of records in segments: where the embedded backend keeps
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
//! - trimming deletes whole old segments, and rewrites the one that straddles the
//!   limit (a temporary file renamed over a new name) only when the trim's slack
//!   is smaller than what the whole segments would leave;
//! - opening cuts a torn last line (a crash mid-write), and removes temporary
//!   files and a segment whose rewrite a crash interrupted.
//!
//! A temporary database's logs keep the same segments in memory (`place`), so it
//! leaves nothing on disk.
//!
//! One process writes a log (the sled database beside it is locked to one
//! process, and `Storage::log` opens each log once per database); callers
//! serialize access (`&mut self`).

mod migrate;
mod open;
mod place;
mod segment;
#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) use migrate::BlockKey;
pub(crate) use segment::Segment;

use super::{Storage, StorageError};
use place::Place;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

/// A new segment starts after this many records...
pub(crate) const SEGMENT_RECORDS: usize = 4096;
/// ...or this many bytes.
pub(crate) const SEGMENT_BYTES: u64 = 4 << 20;

/// A record a log stores.
pub(crate) trait LogRecord: Serialize + DeserializeOwned + Send + 'static {
    /// Its log's name: the folder under `<data_dir>/logs/`, and the sled table
    /// earlier versions kept the records in. One record type, one log.
    const LOG_NAME: &'static str;

    /// The increasing id readers look records up by (`Segment::last_id`); 0 for
    /// records that have none.
    fn log_id(&self) -> u64 {
        0
    }
}

/// The record log of `T` in the folder `dir` of `storage`'s database; the
/// records an earlier version kept in its sled table `T::LOG_NAME` are moved
/// into it first.
pub(crate) fn open_folder<T: LogRecord>(storage: &Storage, dir: &Path) -> Result<RecordLog<T>, StorageError> {
    migrate::migrate_table::<T>(storage, T::LOG_NAME, dir)?;
    RecordLog::open(dir)
}

/// An append-only log of `T`, its segments in a folder or in memory.
pub(crate) struct RecordLog<T> {
    place: Place,
    /// Oldest first.
    segments: VecDeque<Segment>,
    records: usize,
    /// One more than the greatest `log_id` appended or found on opening: ids
    /// continue past records trimmed away.
    next_id: u64,
    _records: PhantomData<fn() -> T>,
}

impl<T: LogRecord> RecordLog<T> {
    /// Opens (creating if needed) the log in the folder `dir`, repairing what a
    /// crash left.
    pub(crate) fn open(dir: &Path) -> Result<RecordLog<T>, StorageError> {
        std::fs::create_dir_all(dir).map_err(|source| StorageError::CreateDir {
            path: dir.to_owned(),
            source,
        })?;
        let segments = open::scan::<T>(dir)?;
        Ok(RecordLog {
            place: Place::folder(dir),
            records: segments.iter().map(|s| s.records).sum(),
            next_id: segments.back().map_or(1, |s| s.last_id + 1),
            segments,
            _records: PhantomData,
        })
    }

    /// An empty log in memory, gone with it (a temporary database's).
    pub(crate) fn in_memory() -> RecordLog<T> {
        RecordLog {
            place: Place::Memory(Default::default()),
            segments: VecDeque::new(),
            records: 0,
            next_id: 1,
            _records: PhantomData,
        }
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
    fn read(&self, segment: &Segment) -> Result<(PathBuf, Cow<'_, [u8]>), StorageError> {
        Ok((self.place.path(segment.first), self.place.read(segment.first)?))
    }

    /// The `log_id` of the newest record.
    pub(crate) fn last_id(&self) -> Option<u64> {
        self.segments.back().map(|s| s.last_id)
    }

    /// The id for the next record: one more than any this log has held, so an
    /// id is never given twice, even after the records holding it are trimmed.
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id
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
        self.place.append(segment.first, segment.bytes, &lines)?;
        segment.records += batch.len();
        segment.bytes += lines.len() as u64;
        segment.last_ms = segment.last_ms.max(now_ms);
        segment.last_id = last.log_id();
        self.next_id = self.next_id.max(last.log_id() + 1);
        self.records += batch.len();
        Ok(())
    }

    /// Starts an empty newest segment after the others.
    fn start_segment(&mut self, now_ms: u64) -> Result<(), StorageError> {
        let (first, last_ms, last_id) = self
            .segments
            .back()
            .map_or((0, now_ms, 0), |s| (s.end(), s.last_ms.max(now_ms), s.last_id));
        self.place.create(first)?;
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
    /// removes the oldest: whole segments while at least `keep` records remain,
    /// then, only if more than `keep + slack` still do (segments larger than the
    /// slack), the oldest part of the segment that straddles `keep`. So between
    /// `keep` and `keep + slack` remain, and a busy log deletes files instead of
    /// rewriting its oldest segment at every trim (at 45,000 calls a second that
    /// rewrite and its sync were 2% of the hub's CPU). `slack` 0 trims to exactly
    /// `keep` (the stores' `trim` contract).
    pub(crate) fn trim(&mut self, keep: usize, slack: usize) -> Result<(), StorageError> {
        let limit = keep.saturating_add(slack);
        let over = self.records > limit || (keep == 0 && self.records > 0);
        if !over {
            return Ok(());
        }
        while let Some(oldest) = self.segments.front().copied()
            && self.records > keep
            && self.records - oldest.records >= keep
        {
            self.place.remove(oldest.first)?;
            self.segments.pop_front();
            self.records -= oldest.records;
        }
        if self.records > limit
            && let Some(oldest) = self.segments.front().copied()
        {
            let cut = self.records - keep;
            self.cut_front(oldest, cut)?;
            self.records -= cut;
        }
        self.place.sync()
    }

    /// Rewrites `oldest` without its first `cut` records, under the sequence
    /// number of the first it keeps.
    fn cut_front(&mut self, oldest: Segment, cut: usize) -> Result<(), StorageError> {
        let (_, bytes) = self.read(&oldest)?;
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
        self.place.replace(oldest.first, trimmed.first, out)?;
        *self.segments.front_mut().expect("oldest is stored") = trimmed;
        Ok(())
    }
}
