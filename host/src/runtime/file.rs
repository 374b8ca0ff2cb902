//! Reading the files a plugin is made of (`NAME.wasm`, `NAME.toml`): regular files
//! only, opened without blocking (a FIFO's open would wait for a writer) and
//! checked by the opened handle's type, and read up to a cap while reading (a
//! device's metadata says size 0 and it never ends).

use std::fmt;
use std::fs::{File, FileType, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// What a path is when it is not a regular file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A directory.
    Directory,
    /// A FIFO (named pipe): opening it for reading would wait for a writer.
    Fifo,
    /// A Unix socket.
    Socket,
    /// A character device (e.g. `/dev/zero`): may never end.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// Anything else that is not a regular file.
    Other,
}

impl FileKind {
    /// `None` for a regular file.
    fn of(ty: FileType) -> Option<FileKind> {
        Some(if ty.is_file() {
            return None;
        } else if ty.is_dir() {
            FileKind::Directory
        } else if ty.is_fifo() {
            FileKind::Fifo
        } else if ty.is_socket() {
            FileKind::Socket
        } else if ty.is_char_device() {
            FileKind::CharDevice
        } else if ty.is_block_device() {
            FileKind::BlockDevice
        } else {
            FileKind::Other
        })
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileKind::Directory => "a directory",
            FileKind::Fifo => "a FIFO (named pipe)",
            FileKind::Socket => "a socket",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Other => "not a regular file",
        })
    }
}

/// Why a plugin file could not be read.
#[derive(Debug)]
pub enum ReadError {
    Io(io::Error),
    /// The path (after symlinks) is a FIFO, a device, a socket, a directory.
    NotRegular(FileKind),
    /// More than `cap` bytes.
    TooLarge {
        cap: u64,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "{e}"),
            ReadError::NotRegular(kind) => write!(f, "it is {kind}, not a regular file"),
            ReadError::TooLarge { cap } => write!(f, "it is larger than {cap} bytes"),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadError::Io(e) => Some(e),
            ReadError::NotRegular(_) | ReadError::TooLarge { .. } => None,
        }
    }
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> ReadError {
        ReadError::Io(e)
    }
}

/// Opens `path` for reading if it is a regular file: checked before opening (a
/// socket cannot be opened at all), opened non-blocking, checked again on the handle
/// (the path may have been swapped in between).
pub(super) fn open_regular(path: &Path) -> Result<File, ReadError> {
    if let Some(kind) = FileKind::of(std::fs::metadata(path)?.file_type()) {
        return Err(ReadError::NotRegular(kind));
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    match FileKind::of(file.metadata()?.file_type()) {
        Some(kind) => Err(ReadError::NotRegular(kind)),
        None => Ok(file),
    }
}

/// The bytes of the regular file `path`, refusing it past `max_plugin_mb` MiB: the
/// loader's cap (`limits.max_plugin_mb`), so hashing a file for `plugins.lock` never
/// reads more than loading it would.
pub(super) fn read_all_regular(path: &Path, max_plugin_mb: u64) -> Result<Vec<u8>, ReadError> {
    read_capped(path, max_plugin_mb.saturating_mul(1 << 20))
}

/// The bytes of the regular file `path`, refusing it past `cap` bytes (at most
/// `cap + 1` bytes are read to find out).
pub(crate) fn read_capped(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    open_regular(path)?
        .take(cap.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(ReadError::TooLarge { cap });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_fifos_are_refused_without_blocking() {
        let dir = crate::test_dir::TempDir::new("wasmhub-file-test");
        let fifo = dir.join("p.wasm");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        assert!(matches!(
            read_capped(&fifo, 10),
            Err(ReadError::NotRegular(FileKind::Fifo))
        ));
        let zero = dir.join("z.wasm");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let e = read_capped(&zero, 10).unwrap_err();
        assert!(matches!(e, ReadError::NotRegular(FileKind::CharDevice)), "{e}");
        let big = dir.join("b.wasm");
        std::fs::write(&big, [0u8; 11]).unwrap();
        assert!(matches!(
            read_capped(&big, 10),
            Err(ReadError::TooLarge { cap: 10 })
        ));
        assert_eq!(read_capped(&big, 11).unwrap().len(), 11);
    }

    #[test]
    fn a_whole_file_read_stops_at_the_plugin_size_limit() {
        let dir = std::env::temp_dir().join(format!("wasmhub-file-cap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("huge.wasm");
        // Sparse: 1 MiB and one byte, past a limit of 1 MiB; never more is read.
        let file = File::create(&path).unwrap();
        file.set_len((1 << 20) + 1).unwrap();
        let e = read_all_regular(&path, 1).unwrap_err();
        assert!(matches!(e, ReadError::TooLarge { cap } if cap == 1 << 20), "{e}");
        file.set_len(1 << 20).unwrap();
        assert_eq!(read_all_regular(&path, 1).unwrap().len(), 1 << 20);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
