//! Where a log's segments live: files in a folder (a database on disk), or
//! buffers in memory (a temporary database, which leaves nothing on disk).
//!
//! The log decides what to write; a place only stores segments by their first
//! sequence number, so both kinds of log keep, trim and read their records the
//! same way.

use super::segment::{self, Segment, io_error};
use crate::storage::StorageError;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// What names an in-memory segment in errors, in place of a folder.
const MEMORY: &str = "(memory)";

/// The segments of one log.
pub(super) enum Place {
    /// Segment files in `dir`.
    Folder {
        dir: PathBuf,
        /// The newest segment's first sequence number and file, open for
        /// appending once something was appended to it.
        newest: Option<(u64, File)>,
    },
    /// Segment contents by first sequence number.
    Memory(BTreeMap<u64, Vec<u8>>),
}

impl Place {
    /// Segment files in `dir` (which exists).
    pub(super) fn folder(dir: &Path) -> Place {
        Place::Folder {
            dir: dir.to_owned(),
            newest: None,
        }
    }

    /// What errors call the segment starting at `first`: its file.
    pub(super) fn path(&self, first: u64) -> PathBuf {
        match self {
            Place::Folder { dir, .. } => Segment::path(dir, first),
            Place::Memory(_) => Segment::path(Path::new(MEMORY), first),
        }
    }

    /// The bytes of the segment starting at `first`.
    pub(super) fn read(&self, first: u64) -> Result<Cow<'_, [u8]>, StorageError> {
        match self {
            Place::Folder { dir, .. } => segment::read(&Segment::path(dir, first)).map(Cow::Owned),
            Place::Memory(segments) => Ok(Cow::Borrowed(segments.get(&first).map_or(&[][..], Vec::as_slice))),
        }
    }

    /// Creates the empty segment starting at `first`, durably.
    pub(super) fn create(&mut self, first: u64) -> Result<(), StorageError> {
        match self {
            Place::Folder { dir, newest } => {
                let path = Segment::path(dir, first);
                let file = OpenOptions::new()
                    .append(true)
                    .create_new(true)
                    .open(&path)
                    .map_err(io_error(&path, "create a log segment"))?;
                segment::sync_dir(dir)?;
                *newest = Some((first, file));
            }
            Place::Memory(segments) => {
                segments.insert(first, Vec::new());
            }
        }
        Ok(())
    }

    /// Appends `lines` to the segment starting at `first`, which holds `len`
    /// bytes, and makes them durable; on failure the segment is cut back to
    /// `len`, so the next line starts clean.
    pub(super) fn append(&mut self, first: u64, len: u64, lines: &[u8]) -> Result<(), StorageError> {
        match self {
            Place::Folder { dir, newest } => {
                let path = Segment::path(dir, first);
                let file = match newest {
                    Some((open, file)) if *open == first => file,
                    _ => {
                        let file = OpenOptions::new()
                            .append(true)
                            .open(&path)
                            .map_err(io_error(&path, "open a log segment"))?;
                        &mut newest.insert((first, file)).1
                    }
                };
                if let Err(e) = file.write_all(lines).and_then(|()| file.sync_data()) {
                    let _ = file.set_len(len);
                    return Err(io_error(&path, "append to a log segment")(e));
                }
            }
            Place::Memory(segments) => segments.entry(first).or_default().extend_from_slice(lines),
        }
        Ok(())
    }

    /// Removes the segment starting at `first`.
    pub(super) fn remove(&mut self, first: u64) -> Result<(), StorageError> {
        match self {
            Place::Folder { dir, newest } => {
                if newest.as_ref().is_some_and(|(open, _)| *open == first) {
                    *newest = None;
                }
                let path = Segment::path(dir, first);
                std::fs::remove_file(&path).map_err(io_error(&path, "remove a log segment"))
            }
            Place::Memory(segments) => {
                segments.remove(&first);
                Ok(())
            }
        }
    }

    /// Replaces the segment starting at `old` by `lines` starting at `new`
    /// (`new` > `old`). On disk the new file is written under a temporary name
    /// and renamed before the old one goes: a crash leaves the old whole, or
    /// both (opening removes the older, `open::scan`).
    pub(super) fn replace(&mut self, old: u64, new: u64, lines: Vec<u8>) -> Result<(), StorageError> {
        match self {
            Place::Folder { dir, .. } => {
                let target = Segment::path(dir, new);
                let temporary = target.with_extension("tmp");
                std::fs::write(&temporary, &lines)
                    .and_then(|()| File::open(&temporary)?.sync_all())
                    .map_err(io_error(&temporary, "write a trimmed log segment"))?;
                std::fs::rename(&temporary, &target)
                    .map_err(io_error(&target, "rename a trimmed log segment"))?;
                segment::sync_dir(dir)?;
                self.remove(old)
            }
            Place::Memory(segments) => {
                segments.remove(&old);
                segments.insert(new, lines);
                Ok(())
            }
        }
    }

    /// Makes the segments created, renamed or removed so far durable.
    pub(super) fn sync(&self) -> Result<(), StorageError> {
        match self {
            Place::Folder { dir, .. } => segment::sync_dir(dir),
            Place::Memory(_) => Ok(()),
        }
    }
}
