//! Opening a log in a folder: reading what each segment file holds, and
//! repairing what a crash left (a torn last line, a temporary file, a segment
//! whose rewrite was cut short). A log in memory starts empty and has nothing to
//! repair.

use super::LogRecord;
use super::segment::{self, Segment, io_error};
use crate::storage::StorageError;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// The segments in `dir`, oldest first, repaired.
pub(super) fn scan<T: LogRecord>(dir: &Path) -> Result<VecDeque<Segment>, StorageError> {
    let mut files: Vec<(u64, PathBuf)> = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(io_error(dir, "list a log folder"))?;
    for entry in entries {
        let path = entry.map_err(io_error(dir, "list a log folder"))?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if let Some(first) = Segment::parse_name(name) {
            files.push((first, path));
        } else if name.ends_with(".tmp") {
            // A trimmed segment a crash left before its rename: the original stays.
            remove(&path)?;
        } else {
            crate::warn!("{}: ignoring {name}, not a log segment", dir.display());
        }
    }
    files.sort();
    let mut segments: VecDeque<Segment> = VecDeque::with_capacity(files.len());
    for (first, path) in files {
        let Some(found) = read_segment::<T>(first, &path)? else {
            remove(&path)?;
            continue;
        };
        // A rewrite keeps the newest records of a segment under a later number;
        // a crash after its rename leaves the original too: the older goes.
        if let Some(previous) = segments.back()
            && previous.end() > found.first
        {
            remove(&Segment::path(dir, previous.first))?;
            segments.pop_back();
        }
        let floor = segments.back().map_or(0, |s| s.last_ms);
        segments.push_back(Segment {
            last_ms: found.last_ms.max(floor),
            ..found
        });
    }
    Ok(segments)
}

/// What the segment file at `path` holds, its torn last line cut; `None` when it
/// holds no record.
fn read_segment<T: LogRecord>(first: u64, path: &Path) -> Result<Option<Segment>, StorageError> {
    let bytes = segment::read(path)?;
    let complete = segment::complete_len(&bytes);
    if complete < bytes.len() {
        crate::warn!(
            "{}: cutting {} bytes of a record a crash left half-written",
            path.display(),
            bytes.len() - complete
        );
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|f| f.set_len(complete as u64).and_then(|()| f.sync_all()))
            .map_err(io_error(path, "cut a torn log line"))?;
    }
    let lines = || segment::lines(&bytes);
    let records = lines().count();
    if records == 0 {
        return Ok(None);
    }
    // The newest record that decodes gives the id (a corrupt line is reported
    // when it is read).
    let last_id = lines()
        .rev()
        .find_map(|line| segment::decode::<T>(path, line).ok())
        .map_or(0, |r| r.log_id());
    let modified = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .map_err(io_error(path, "read a log segment's time"))?;
    let last_ms = modified
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    Ok(Some(Segment {
        first,
        records,
        bytes: complete as u64,
        last_ms,
        last_id,
    }))
}

fn remove(path: &Path) -> Result<(), StorageError> {
    std::fs::remove_file(path).map_err(io_error(path, "remove a log file"))
}
