//! `plugins.lock`: the sha256 of every pinned plugin file, in the plugins folder.
//!
//! The format is `sha256sum`'s: one `<64 hex digits>  <file name>` line per plugin,
//! sorted by name, `#` comments allowed. So `sha256sum -c plugins.lock` run in the
//! folder checks it too. With `serve --locked`, a file missing from the lock or with
//! another digest is rejected before it is compiled.
//!
//! A plugin pulled from a registry also has a `#@source <file> <reference>
//! <manifest digest>` line (a comment to `sha256sum`): where it came from and which
//! registry manifest the reference resolved to, so `--locked` can refuse a tag that
//! moved. Lock files without such lines read as before.

use super::cache::sha256_hex;
use super::file::ReadError;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The lock file's name inside the plugins folder.
pub const LOCK_FILE: &str = "plugins.lock";

/// Why a lock file could not be read or written.
#[derive(Debug)]
pub enum LockError {
    /// The file or folder cannot be read or written.
    Io {
        /// What failed: the lock file, the plugins folder or a `.wasm` being hashed.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// A line that is not `<sha256>  <name>.wasm`.
    Syntax {
        /// The lock file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with the line.
        message: String,
    },
    /// A `.wasm` larger than the loader would load (`limits.max_plugin_mb`).
    TooLarge {
        /// The file.
        path: PathBuf,
        /// `limits.max_plugin_mb`, in MiB.
        limit_mb: u64,
    },
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            LockError::Syntax { path, line, message } => {
                write!(f, "{} line {line}: {message}", path.display())
            }
            LockError::TooLarge { path, limit_mb } => write!(
                f,
                "{}: larger than the limit of {limit_mb} MiB (limits.max_plugin_mb); the hub would not load it",
                path.display()
            ),
        }
    }
}

impl std::error::Error for LockError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LockError::Io { source, .. } => Some(source),
            LockError::Syntax { .. } | LockError::TooLarge { .. } => None,
        }
    }
}

/// Pinned digests by file name (`text.wasm`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LockFile {
    entries: BTreeMap<String, String>,
    sources: BTreeMap<String, Source>,
}

/// Where a pinned plugin was pulled from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// The reference pulled, as written (`oci://host/repo:tag`).
    pub reference: String,
    /// `sha256:<hex>` of the registry manifest it resolved to.
    pub manifest_digest: String,
}

/// The marker of a source line.
const SOURCE_MARK: &str = "#@source";

impl LockFile {
    /// Reads `dir/plugins.lock`.
    pub fn read(dir: &Path) -> Result<LockFile, LockError> {
        let path = dir.join(LOCK_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| LockError::Io {
            path: path.clone(),
            source: e,
        })?;
        LockFile::parse(&text, &path)
    }

    /// Parses lock-file text; `path` only labels errors.
    pub fn parse(text: &str, path: &Path) -> Result<LockFile, LockError> {
        let mut entries = BTreeMap::new();
        let mut sources = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            let syntax = |message: String| LockError::Syntax {
                path: path.to_owned(),
                line: i + 1,
                message,
            };
            if let Some(rest) = line.strip_prefix(SOURCE_MARK) {
                let (name, source) = parse_source(rest).map_err(|e| syntax(e.to_string()))?;
                sources.insert(name, source);
                continue;
            }
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (digest, name) = line
                .split_once(char::is_whitespace)
                .ok_or_else(|| syntax("expected `<sha256>  <name>.wasm`".into()))?;
            // sha256sum marks binary mode with a leading '*' on the name.
            let name = name.trim_start().trim_start_matches('*');
            if digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(syntax(format!("{digest:?} is not a sha256 hex digest")));
            }
            if !name.ends_with(".wasm") || name.contains('/') {
                return Err(syntax(format!(
                    "{name:?} is not a .wasm file name in this folder"
                )));
            }
            if entries
                .insert(name.to_string(), digest.to_ascii_lowercase())
                .is_some()
            {
                return Err(syntax(format!("{name} is listed twice")));
            }
        }
        // A source without its digest line pins nothing: dropped.
        sources.retain(|name, _| entries.contains_key(name));
        Ok(LockFile { entries, sources })
    }

    /// Pins every `.wasm` file currently in `dir`, each within the default
    /// `limits.max_plugin_mb` (see [`LockFile::from_dir_within`]).
    pub fn from_dir(dir: &Path) -> Result<LockFile, LockError> {
        LockFile::from_dir_within(dir, crate::config::Limits::default().load.max_plugin_mb)
    }

    /// Pins every `.wasm` file currently in `dir`; a file larger than
    /// `max_plugin_mb` MiB (`limits.max_plugin_mb`, which the loader would reject)
    /// fails the whole lock, after reading at most one byte past the limit.
    pub fn from_dir_within(dir: &Path, max_plugin_mb: u64) -> Result<LockFile, LockError> {
        let io = |e: std::io::Error| LockError::Io {
            path: dir.to_owned(),
            source: e,
        };
        let mut lock = LockFile::default();
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let path = entry.map_err(io)?.path();
            if path.extension().is_some_and(|e| e == "wasm") {
                // A FIFO or a device is not a plugin (the loader rejects it): skipped
                // without reading, as a folder is.
                let bytes = match super::file::read_all_regular(&path, max_plugin_mb) {
                    Ok(bytes) => bytes,
                    Err(ReadError::Io(e)) => {
                        return Err(LockError::Io {
                            path: path.clone(),
                            source: e,
                        });
                    }
                    Err(ReadError::TooLarge { .. }) => {
                        return Err(LockError::TooLarge {
                            path: path.clone(),
                            limit_mb: max_plugin_mb,
                        });
                    }
                    Err(ReadError::NotRegular(_)) => continue,
                };
                let name = path
                    .file_name()
                    .expect("a file has a name")
                    .to_string_lossy()
                    .into_owned();
                lock.entries.insert(name, sha256_hex(&bytes));
            }
        }
        Ok(lock)
    }

    /// Writes `dir/plugins.lock` atomically (temporary file, then rename).
    pub fn write(&self, dir: &Path) -> Result<(), LockError> {
        let path = dir.join(LOCK_FILE);
        let tmp = dir.join(format!(".{LOCK_FILE}.tmp"));
        let io = |e: std::io::Error| LockError::Io {
            path: path.clone(),
            source: e,
        };
        std::fs::write(&tmp, self.to_string()).map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(io)
    }

    /// The pinned digest of `file_name` (`text.wasm`).
    pub fn digest(&self, file_name: &str) -> Option<&str> {
        self.entries.get(file_name).map(String::as_str)
    }

    /// Pins `file_name` to `digest` (stored lowercase), replacing any earlier pin
    /// (and forgetting its source: see [`LockFile::insert_pulled`]).
    pub fn insert(&mut self, file_name: &str, digest: &str) {
        self.entries
            .insert(file_name.to_string(), digest.to_ascii_lowercase());
        self.sources.remove(file_name);
    }

    /// Pins `file_name`, pulled from `source`, to `digest`.
    pub fn insert_pulled(&mut self, file_name: &str, digest: &str, source: Source) {
        self.insert(file_name, digest);
        self.sources.insert(file_name.to_string(), source);
    }

    /// Where `file_name` was pulled from, when it was.
    pub fn source(&self, file_name: &str) -> Option<&Source> {
        self.sources.get(file_name)
    }

    /// The pin of a file pulled from `reference`, as (file name, source).
    pub fn pulled_from(&self, reference: &str) -> Option<(&str, &Source)> {
        self.sources
            .iter()
            .find(|(_, s)| s.reference == reference)
            .map(|(n, s)| (n.as_str(), s))
    }

    /// Keeps the sources of `earlier` for the files whose digest did not change
    /// (`plugin lock` re-pins a folder without forgetting where files came from).
    pub fn keep_sources_of(&mut self, earlier: &LockFile) {
        for (name, source) in &earlier.sources {
            if earlier.digest(name).is_some() && earlier.digest(name) == self.digest(name) {
                self.sources.insert(name.clone(), source.clone());
            }
        }
    }

    /// Every pin as (file name, lowercase hex digest), sorted by file name.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(n, d)| (n.as_str(), d.as_str()))
    }

    /// How many files are pinned.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no file is pinned.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl fmt::Display for LockFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "# wasmhub plugins.lock: sha256 of each plugin (check with `sha256sum -c plugins.lock`)"
        )?;
        for (name, digest) in &self.entries {
            if let Some(s) = self.sources.get(name) {
                writeln!(f, "{SOURCE_MARK} {name} {} {}", s.reference, s.manifest_digest)?;
            }
            writeln!(f, "{digest}  {name}")?;
        }
        Ok(())
    }
}

/// Why a source line of the lock file is not one.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SourceLineError {
    /// Not three fields.
    Shape,
    /// The third field is not `sha256:<64 hex digits>`.
    Digest(String),
}

impl std::fmt::Display for SourceLineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceLineError::Shape => write!(
                f,
                "expected `{SOURCE_MARK} <name>.wasm <reference> sha256:<manifest digest>`"
            ),
            SourceLineError::Digest(digest) => {
                write!(f, "{digest:?} is not a sha256:<hex> manifest digest")
            }
        }
    }
}

/// `<file> <reference> <manifest digest>` after the source mark.
fn parse_source(rest: &str) -> Result<(String, Source), SourceLineError> {
    let parts: Vec<&str> = rest.split_whitespace().collect();
    let [name, reference, digest] = parts.as_slice() else {
        return Err(SourceLineError::Shape);
    };
    let hex = digest.strip_prefix("sha256:").unwrap_or_default();
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(SourceLineError::Digest(digest.to_string()));
    }
    let source = Source {
        reference: reference.to_string(),
        manifest_digest: digest.to_ascii_lowercase(),
    };
    Ok((name.to_string(), source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_accepts_sha256sum_output() {
        let mut lock = LockFile::default();
        lock.insert("text.wasm", &"AB".repeat(32));
        let text = lock.to_string();
        let back = LockFile::parse(&text, Path::new("plugins.lock")).unwrap();
        assert_eq!(back, lock);
        assert_eq!(back.digest("text.wasm"), Some("ab".repeat(32).as_str()));
        let sum = format!("{}  calc.wasm\n{} *json.wasm\n", "0".repeat(64), "1".repeat(64));
        let parsed = LockFile::parse(&sum, Path::new("l")).unwrap();
        assert_eq!(parsed.len(), 2);
        assert!(parsed.digest("json.wasm").is_some());
    }

    #[test]
    fn a_file_past_the_plugin_size_limit_fails_the_lock_naming_the_limit() {
        let dir = std::env::temp_dir().join(format!("wasmhub-lock-cap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("small.wasm"), b"\0asm").unwrap();
        // Sparse, so the test writes nothing like 2 MiB.
        std::fs::File::create(dir.join("huge.wasm"))
            .unwrap()
            .set_len(2 << 20)
            .unwrap();
        let err = LockFile::from_dir_within(&dir, 1).unwrap_err().to_string();
        assert!(
            err.contains("huge.wasm: larger than the limit of 1 MiB (limits.max_plugin_mb)"),
            "{err}"
        );
        let lock = LockFile::from_dir_within(&dir, 2).unwrap();
        assert_eq!(lock.len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sources_round_trip_and_old_files_still_read() {
        let mut lock = LockFile::default();
        let source = Source {
            reference: "oci://127.0.0.1:5000/plugins/text:1.0".into(),
            manifest_digest: format!("sha256:{}", "c".repeat(64)),
        };
        lock.insert_pulled("text.wasm", &"a".repeat(64), source.clone());
        lock.insert("calc.wasm", &"b".repeat(64));
        let text = lock.to_string();
        assert!(
            text.contains("#@source text.wasm oci://127.0.0.1:5000/plugins/text:1.0 sha256:ccc"),
            "{text}"
        );
        let back = LockFile::parse(&text, Path::new("l")).unwrap();
        assert_eq!(back, lock);
        assert_eq!(back.source("text.wasm"), Some(&source));
        assert_eq!(
            back.pulled_from(&source.reference).map(|(n, _)| n),
            Some("text.wasm")
        );
        let mut relocked = LockFile::default();
        relocked.insert("text.wasm", &"a".repeat(64));
        relocked.keep_sources_of(&back);
        assert_eq!(relocked.source("text.wasm"), Some(&source));
        let err = LockFile::parse("#@source a.wasm oci://x sha256:zz\n", Path::new("l")).unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
    }

    #[test]
    fn bad_lines_name_the_line() {
        let err = LockFile::parse("# c\nzz  a.wasm\n", Path::new("plugins.lock"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2"), "{err}");
        let err = LockFile::parse(&format!("{}  a.txt\n", "0".repeat(64)), Path::new("l")).unwrap_err();
        assert!(err.to_string().contains("not a .wasm"), "{err}");
    }
}
