//! The compiled-component cache in the sled table `compiled`.
//!
//! Key: `<engine compatibility hash>/<sha256 of the .wasm>`, so artifacts of another
//! wasmtime version or engine configuration are never even looked up. Value:
//! `sha256(artifact) || artifact`, written only by this module from
//! `Engine::precompile_component`'s output; the digest is checked before
//! `Component::deserialize`, so a corrupted entry is dropped and recompiled instead
//! of being loaded as native code. wasmtime also rejects artifacts whose header does
//! not match the engine.

use crate::storage::{Storage, StorageError, Table};
use ring::digest::{Context, SHA256};
use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};
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

/// A hex digest of everything that makes a compiled artifact usable by `engine`.
pub(super) fn engine_hash(engine: &Engine) -> String {
    let mut h = ShaHasher(Context::new(&SHA256));
    engine.precompile_compatibility_hash().hash(&mut h);
    hex(&h.0.finish().as_ref()[..16])
}

/// Compiled artifacts of this engine, keyed by the source's sha256.
#[derive(Clone)]
pub(super) struct CompiledCache {
    table: Table,
    prefix: String,
}

impl CompiledCache {
    pub(super) fn open(storage: &Storage, engine: &Engine) -> Result<CompiledCache, StorageError> {
        Ok(CompiledCache {
            table: storage.table("compiled")?,
            prefix: format!("{}/", engine_hash(engine)),
        })
    }

    fn key(&self, digest: &str) -> Vec<u8> {
        format!("{}{digest}", self.prefix).into_bytes()
    }

    /// The cached component for `digest`, if a valid one is stored. Failures are
    /// logged and treated as a miss: the cache is an optimization only.
    pub(super) fn get(&self, engine: &Engine, digest: &str) -> Option<Component> {
        let key = self.key(digest);
        let value = match self.table.get_bytes(&key) {
            Ok(v) => v?,
            Err(e) => {
                crate::warn!("compiled cache: cannot read {digest}: {e}");
                return None;
            }
        };
        if value.len() < 32 || ring::digest::digest(&SHA256, &value[32..]).as_ref() != &value[..32] {
            crate::warn!("compiled cache: entry for {digest} is corrupt; recompiling");
            let _ = self.table.remove(&key);
            return None;
        }
        // SAFETY: the bytes are exactly what `put` stored, i.e. the output of
        // `Engine::precompile_component` on this engine configuration (the key
        // carries the engine hash, the digest check rules out corruption), which is
        // the contract `Component::deserialize` requires.
        match unsafe { Component::deserialize(engine, &value[32..]) } {
            Ok(c) => Some(c),
            Err(e) => {
                crate::warn!("compiled cache: entry for {digest} rejected by wasmtime ({e}); recompiling");
                let _ = self.table.remove(&key);
                None
            }
        }
    }

    /// Stores an artifact produced by `Engine::precompile_component`.
    pub(super) fn put(&self, digest: &str, artifact: &[u8]) {
        let mut value = Vec::with_capacity(32 + artifact.len());
        value.extend_from_slice(ring::digest::digest(&SHA256, artifact).as_ref());
        value.extend_from_slice(artifact);
        if let Err(e) = self
            .table
            .put_bytes(&self.key(digest), &value)
            .and_then(|()| self.table.flush())
        {
            crate::warn!("compiled cache: cannot store {digest}: {e}");
        }
    }

    /// Removes every entry except this engine's entries for `keep` (digests):
    /// artifacts of plugins no longer in the folder, and of other wasmtime versions
    /// or engine settings, which this engine would never read. Returns how many went.
    pub(super) fn prune(&self, keep: &BTreeSet<&str>) -> Result<usize, StorageError> {
        let stale: Vec<Vec<u8>> = self
            .table
            .keys()?
            .into_iter()
            .filter(|key| {
                let digest = key
                    .strip_prefix(self.prefix.as_bytes())
                    .and_then(|d| std::str::from_utf8(d).ok());
                !digest.is_some_and(|d| keep.contains(d))
            })
            .collect();
        self.table.rewrite::<()>(&stale, &[])?;
        Ok(stale.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pruning_keeps_only_this_engines_entries_for_the_given_digests() {
        let storage = Storage::temporary().unwrap();
        let engine = Engine::default();
        let cache = CompiledCache::open(&storage, &engine).unwrap();
        cache.put("aaaa", b"artifact a");
        cache.put("bbbb", b"artifact b");
        let table = storage.table("compiled").unwrap();
        table
            .put_bytes(b"0123456789abcdef/aaaa", b"another engine's")
            .unwrap();
        assert_eq!(cache.prune(&BTreeSet::from(["aaaa"])).unwrap(), 2);
        assert_eq!(table.keys().unwrap(), [cache.key("aaaa")]);
        assert_eq!(cache.prune(&BTreeSet::new()).unwrap(), 1);
        assert!(table.is_empty());
    }
}
