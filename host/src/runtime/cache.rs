//! The compiled-component cache: one file per plugin in
//! `<data_dir>/compiled/<engine hash>/`, named `<sha256 of the .wasm>.<sha256 of the
//! artifact>.cwasm`, so artifacts of another wasmtime version or engine
//! configuration are never even looked at. Files are written only by this module,
//! from `Engine::precompile_component`'s output, atomically (a temporary file renamed
//! into place), and read with `Component::deserialize_file`, which maps the file:
//! its code pages are shared with the page cache and only the ones a plugin runs
//! become resident, where a copy into the heap kept every plugin's whole code
//! resident (the Python and JavaScript plugins carry an interpreter each). The
//! artifact digest in the name is checked before mapping, so a corrupted file is
//! dropped and recompiled instead of being loaded as native code; wasmtime also
//! rejects artifacts whose header does not match the engine. The cache stays local
//! to each node: it is native code for this machine's CPU.

use super::code_pages::CodePages;
use ring::digest::{Context, SHA256};
use std::collections::BTreeSet;
use std::fs;
use std::hash::{Hash, Hasher};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Feeds `Hash` impls into SHA-256, so the engine hash is stable across runs (std's
/// `DefaultHasher` is only stable within one build, and we want a plain digest).
/// (ring's SHA-256: ring is already in the tree for TLS, so no second digest crate.)
struct ShaHasher(Context);

impl Hasher for ShaHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    fn finish(&self) -> u64 {
        let d = self.0.clone().finish();
        u64::from_le_bytes(d.as_ref()[..8].try_into().expect("8 bytes"))
    }
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// sha256 of `bytes`, lowercase hex.
pub(super) fn sha256_hex(bytes: &[u8]) -> String {
    hex(ring::digest::digest(&SHA256, bytes).as_ref())
}

/// sha256 of the file at `path`, lowercase hex, read in blocks (an artifact can be
/// tens of MiB; it is never held in memory whole).
fn sha256_of_file(path: &Path) -> io::Result<String> {
    let mut file = fs::File::open(path)?;
    let mut context = Context::new(&SHA256);
    let mut block = vec![0u8; 256 * 1024];
    loop {
        match file.read(&mut block)? {
            0 => return Ok(hex(context.finish().as_ref())),
            n => context.update(&block[..n]),
        }
    }
}

/// A hex digest of everything that makes a compiled artifact usable by `engine`.
pub(super) fn engine_hash(engine: &Engine) -> String {
    let mut h = ShaHasher(Context::new(&SHA256));
    engine.precompile_compatibility_hash().hash(&mut h);
    hex(&h.0.finish().as_ref()[..16])
}

const SUFFIX: &str = ".cwasm";

/// Compiled artifacts of this engine, keyed by the source's sha256.
#[derive(Clone)]
pub(super) struct CompiledCache {
    /// `<root>/<engine hash>`: this engine's artifacts.
    dir: PathBuf,
}

impl CompiledCache {
    /// The cache under `root` (created if missing) for `engine`.
    pub(super) fn open(root: &Path, engine: &Engine) -> io::Result<CompiledCache> {
        let dir = root.join(engine_hash(engine));
        fs::create_dir_all(&dir)?;
        Ok(CompiledCache { dir })
    }

    /// The folder holding this engine's artifacts.
    #[cfg(test)]
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The artifact files stored for `digest` (normally one), with the artifact
    /// digest their name carries.
    fn entries(&self, digest: &str) -> io::Result<Vec<(PathBuf, String)>> {
        let prefix = format!("{digest}.");
        let mut found = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let name = entry?.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(sum) = name.strip_prefix(&prefix).and_then(|r| r.strip_suffix(SUFFIX)) {
                found.push((self.dir.join(name), sum.to_string()));
            }
        }
        Ok(found)
    }

    /// The cached component for `digest`, if a valid one is stored. Failures are
    /// logged and treated as a miss: the cache is an optimization only.
    pub(super) fn get(&self, engine: &Engine, digest: &str) -> Option<(Component, CodePages)> {
        let entries = match self.entries(digest) {
            Ok(entries) => entries,
            Err(e) => {
                crate::warn!("compiled cache: cannot read {}: {e}", self.dir.display());
                return None;
            }
        };
        let (path, sum) = entries.into_iter().next()?;
        if sha256_of_file(&path).ok().as_deref() != Some(sum.as_str()) {
            crate::warn!("compiled cache: entry for {digest} is corrupt; recompiling");
            let _ = fs::remove_file(&path);
            return None;
        }
        Self::map(engine, digest, &path)
    }

    /// The component in the artifact file at `path`, mapped, with its code's pages;
    /// `None` (and the file removed) when wasmtime rejects it.
    fn map(engine: &Engine, digest: &str, path: &Path) -> Option<(Component, CodePages)> {
        // SAFETY: the file is exactly what `put` wrote, i.e. the output of
        // `Engine::precompile_component` on this engine configuration (the folder
        // carries the engine hash; `get` checked the digest, ruling out corruption),
        // which is the contract `Component::deserialize_file` requires. Files are
        // only ever replaced by rename or unlinked, never written in place, so a
        // mapped file does not change under a running plugin.
        match unsafe { Component::deserialize_file(engine, path) } {
            Ok(c) => {
                let code = CodePages::mapped(&c);
                Some((c, code))
            }
            Err(e) => {
                crate::warn!("compiled cache: entry for {digest} rejected by wasmtime ({e}); recompiling");
                let _ = fs::remove_file(path);
                None
            }
        }
    }

    /// Stores an artifact produced by `engine`'s `precompile_component` and returns
    /// the component mapped from the stored file (so a freshly compiled plugin's
    /// code is file-backed too); `None` when it cannot be stored (logged).
    pub(super) fn put(
        &self,
        engine: &Engine,
        digest: &str,
        artifact: &[u8],
    ) -> Option<(Component, CodePages)> {
        match self.store(digest, artifact) {
            Ok(path) => Self::map(engine, digest, &path),
            Err(e) => {
                crate::warn!("compiled cache: cannot store {digest}: {e}");
                None
            }
        }
    }

    /// Writes `artifact` as `digest`'s file, replacing any other artifact of it.
    fn store(&self, digest: &str, artifact: &[u8]) -> io::Result<PathBuf> {
        let name = format!("{digest}.{}{SUFFIX}", sha256_hex(artifact));
        self.write(&name, artifact)?;
        for (path, _) in self.entries(digest)? {
            if path.file_name().and_then(|n| n.to_str()) != Some(name.as_str()) {
                let _ = fs::remove_file(path);
            }
        }
        Ok(self.dir.join(name))
    }

    /// Writes `bytes` to `name` atomically: a temporary file, synced, then renamed.
    fn write(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        // Unique per process and write: two loads of one plugin may race here.
        static WRITES: AtomicU64 = AtomicU64::new(0);
        let write = WRITES.fetch_add(1, Ordering::Relaxed);
        let temp = self
            .dir
            .join(format!(".{name}.{}-{write}.tmp", std::process::id()));
        let result = (|| {
            let mut file = fs::File::create(&temp)?;
            file.write_all(bytes)?;
            file.sync_all()?;
            fs::rename(&temp, self.dir.join(name))
        })();
        if result.is_err() {
            let _ = fs::remove_file(&temp);
        }
        result
    }

    /// Removes every artifact except this engine's for `keep` (digests): plugins no
    /// longer in the folder, other wasmtime versions or engine settings (whole
    /// folders), and temporary files a stopped process left. Returns how many went.
    pub(super) fn prune(&self, keep: &BTreeSet<&str>) -> io::Result<usize> {
        let mut removed = 0;
        if let Some(root) = self.dir.parent() {
            for entry in fs::read_dir(root)? {
                let path = entry?.path();
                if path != self.dir && path.is_dir() {
                    removed += fs::read_dir(&path)?.count();
                    fs::remove_dir_all(&path)?;
                }
            }
        }
        let ours = format!(".{}-", std::process::id());
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let stale = match name.split_once('.') {
                Some(("", rest)) => rest.ends_with(".tmp") && !rest.contains(&ours),
                Some((digest, _)) => !keep.contains(digest),
                None => true,
            };
            if stale {
                fs::remove_file(entry.path())?;
                removed += 1;
            }
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_dir::{TempDir, file_names as names};

    #[test]
    fn an_artifact_is_stored_under_both_digests_and_replaces_the_previous_one() {
        let root = TempDir::new("cache-put");
        let engine = Engine::default();
        let cache = CompiledCache::open(root.path(), &engine).unwrap();
        cache.store("aaaa", b"first").unwrap();
        cache.store("aaaa", b"second").unwrap();
        assert_eq!(
            names(cache.dir()),
            [format!("aaaa.{}.cwasm", sha256_hex(b"second"))]
        );
        assert_eq!(
            fs::read(cache.dir().join(&names(cache.dir())[0])).unwrap(),
            b"second"
        );
    }

    #[test]
    fn a_file_that_does_not_match_its_digest_is_a_miss_and_is_removed() {
        let root = TempDir::new("cache-corrupt");
        let engine = Engine::default();
        let cache = CompiledCache::open(root.path(), &engine).unwrap();
        cache.store("aaaa", b"artifact").unwrap();
        let path = cache.dir().join(&names(cache.dir())[0]);
        fs::write(&path, b"artifacT").unwrap();
        assert!(cache.get(&engine, "aaaa").is_none());
        assert!(names(cache.dir()).is_empty());
    }

    #[test]
    fn pruning_keeps_only_this_engines_entries_for_the_given_digests() {
        let root = TempDir::new("cache-prune");
        let engine = Engine::default();
        let cache = CompiledCache::open(root.path(), &engine).unwrap();
        cache.store("aaaa", b"artifact a").unwrap();
        cache.store("bbbb", b"artifact b").unwrap();
        let other_engine = root.path().join("0123456789abcdef");
        fs::create_dir_all(&other_engine).unwrap();
        fs::write(other_engine.join("aaaa.00.cwasm"), b"another engine's").unwrap();
        fs::write(cache.dir().join(".cccc.00.cwasm.1-0.tmp"), b"left by a crash").unwrap();
        assert_eq!(cache.prune(&BTreeSet::from(["aaaa"])).unwrap(), 3);
        assert_eq!(
            names(cache.dir()),
            [format!("aaaa.{}.cwasm", sha256_hex(b"artifact a"))]
        );
        assert!(!other_engine.exists());
        assert_eq!(cache.prune(&BTreeSet::new()).unwrap(), 1);
        assert!(names(cache.dir()).is_empty());
    }
}
