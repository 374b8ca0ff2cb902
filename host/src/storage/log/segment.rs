//! One segment of a record log: its file name (in memory too, where it names the
//! segment in errors), what the log keeps in memory about it, and reading its
//! lines.

use super::LogRecord;
use crate::storage::StorageError;
use std::path::{Path, PathBuf};

/// Segment files end in this.
const EXTENSION: &str = "jsonl";

/// What the log keeps in memory about one segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Segment {
    /// The sequence number of its first record (also its file name).
    pub(crate) first: u64,
    /// How many records (lines) it holds.
    pub(crate) records: usize,
    /// Its length in bytes.
    pub(crate) bytes: u64,
    /// When it was last appended to (Unix ms, never less than an older
    /// segment's): every record in it was written at or before this.
    pub(crate) last_ms: u64,
    /// `LogRecord::log_id` of its newest record.
    pub(crate) last_id: u64,
}

impl Segment {
    /// The file of the segment starting at `first` in `dir`.
    pub(super) fn path(dir: &Path, first: u64) -> PathBuf {
        dir.join(format!("{first:020}.{EXTENSION}"))
    }

    /// The sequence number a segment file's name gives, if it names one.
    pub(super) fn parse_name(name: &str) -> Option<u64> {
        let digits = name.strip_suffix(EXTENSION)?.strip_suffix('.')?;
        if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok()
    }

    /// The sequence number after its last record.
    pub(super) fn end(&self) -> u64 {
        self.first + self.records as u64
    }
}

/// For `map_err`: a filesystem error on `path` while doing `during`.
pub(super) fn io_error(path: &Path, during: &'static str) -> impl FnOnce(std::io::Error) -> StorageError {
    let path = path.to_owned();
    move |source| StorageError::File { path, during, source }
}

/// The whole file at `path`.
pub(super) fn read(path: &Path) -> Result<Vec<u8>, StorageError> {
    std::fs::read(path).map_err(io_error(path, "read a log segment"))
}

/// How many bytes of `bytes` are complete lines (up to and with the last
/// newline; a torn last line, without its newline, is not one).
pub(super) fn complete_len(bytes: &[u8]) -> usize {
    bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)
}

/// The complete lines of `bytes`.
pub(super) fn lines(bytes: &[u8]) -> impl DoubleEndedIterator<Item = &[u8]> {
    bytes[..complete_len(bytes)]
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
}

/// One line decoded; a line that does not decode is `Corrupt` and names the file.
pub(super) fn decode<T: LogRecord>(path: &Path, line: &[u8]) -> Result<T, StorageError> {
    serde_json::from_slice(line).map_err(|source| StorageError::Corrupt {
        table: path.display().to_string(),
        source,
    })
}

/// `records` as JSON lines, appended to `out`.
pub(super) fn encode<T: LogRecord>(records: &[T], out: &mut Vec<u8>) -> Result<(), StorageError> {
    for record in records {
        serde_json::to_writer(&mut *out, record).map_err(StorageError::Encode)?;
        out.push(b'\n');
    }
    Ok(())
}

/// Makes the entries of `dir` (files created, renamed or removed) durable.
pub(super) fn sync_dir(dir: &Path) -> Result<(), StorageError> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_error(dir, "sync a log folder"))
}
