//! Pulling a plugin: resolve the reference to a manifest digest (refusing, when
//! locked, a reference that is not pinned or a tag that moved), fetch the component,
//! its capability manifest and its signature, check the signature against `[trust]`,
//! write `NAME.toml`, `NAME.wasm.sig` and `NAME.wasm` (each through a dotfile and a
//! rename, the component last, so the folder watcher never sees half a plugin), and
//! pin the digest with its source in `plugins.lock`.

use super::manifest::{parse_plugin, parse_signature, signature_tag};
use super::registry::RegistryClient;
use super::{DistError, Options, Reference};
use crate::config::SourceConfig;
use crate::runtime::{
    LOCK_FILE, LockError, LockFile, Signature, Source, TrustPolicy, TrustProblem, manifest_path,
    signature_path, valid_plugin_name,
};
use std::path::{Path, PathBuf};

/// One pull: what, into which folder, under which rules.
pub struct Pull<'a> {
    /// The reference to pull.
    pub reference: &'a Reference,
    /// The plugin name; default: the repository's last segment.
    pub name: Option<&'a str>,
    /// The plugins folder.
    pub dir: &'a Path,
    /// Refuse a reference not pinned in `plugins.lock`, or a tag that moved.
    pub locked: bool,
    /// The signature rules.
    pub trust: &'a TrustPolicy,
    /// How to talk to the registry.
    pub options: &'a Options,
}

/// What a pull did.
#[derive(Debug)]
pub struct Pulled {
    /// The plugin name.
    pub name: String,
    /// The `NAME.wasm` written (or already there).
    pub path: PathBuf,
    /// sha256 of the component, hex.
    pub digest: String,
    /// `sha256:<hex>` of the registry manifest.
    pub manifest_digest: String,
    /// The key id of the verified signer, when `[trust]` checked one.
    pub signer: Option<String>,
    /// Whether a signature was found next to the artifact.
    pub signed: bool,
    /// Whether the folder already had these bytes (nothing was downloaded).
    pub unchanged: bool,
}

impl Pull<'_> {
    /// Runs the pull.
    pub async fn run(&self) -> Result<Pulled, DistError> {
        let name = self.name.unwrap_or(self.reference.default_name()).to_string();
        if !valid_plugin_name(&name) {
            return Err(DistError::BadName(name));
        }
        let file = format!("{name}.wasm");
        let path = self.dir.join(&file);
        let mut lock = read_lock(self.dir)?;
        let mut registry = RegistryClient::new(self.reference, self.options)?;
        let (manifest, manifest_digest) = registry
            .manifest(self.reference.target())
            .await?
            .ok_or_else(|| DistError::NotFound(self.reference.to_string()))?;
        let source = Source {
            reference: self.reference.to_string(),
            manifest_digest: manifest_digest.clone(),
        };
        if self.locked {
            check_locked(&lock, &file, &source)?;
        }
        let artifact = parse_plugin(&manifest)?;
        let digest = artifact.wasm.digest.trim_start_matches("sha256:").to_string();
        let sig = fetch_signature(&mut registry, &manifest_digest).await?;
        let signer = self.trust.check(&digest, sig.as_ref()).map_err(|e| match e {
            TrustProblem::Unsigned => DistError::Unsigned {
                reference: self.reference.to_string(),
                tag: signature_tag(&manifest_digest),
            },
            e => DistError::Trust(e),
        })?;
        let unchanged = lock.digest(&file) == Some(digest.as_str())
            && crate::runtime::sha256_file(&path).is_ok_and(|d| d == digest);
        if !unchanged {
            let wasm = registry.blob(&artifact.wasm.digest).await?;
            let toml = match &artifact.toml {
                Some(d) => Some(registry.blob(&d.digest).await?),
                None => None,
            };
            if let Some(toml) = toml {
                write_atomic(&manifest_path(&path), &toml)?;
            }
            write_signature(&path, sig.as_ref())?;
            write_atomic(&path, &wasm)?;
        } else {
            write_signature(&path, sig.as_ref())?;
        }
        if !self.locked {
            lock.insert_pulled(&file, &digest, source);
            lock.write(self.dir).map_err(DistError::Lock)?;
        }
        Ok(Pulled {
            name,
            path,
            digest,
            manifest_digest,
            signer,
            signed: sig.is_some(),
            unchanged,
        })
    }
}

/// Pulls every source into `dir`, one after another; one result per source, in order.
pub async fn sync(
    sources: &[SourceConfig],
    dir: &Path,
    locked: bool,
    trust: &TrustPolicy,
    options: &Options,
) -> Vec<(String, Result<Pulled, DistError>)> {
    let mut out = Vec::with_capacity(sources.len());
    for s in sources {
        let result = match Reference::parse(&s.reference) {
            Ok(reference) => {
                let pull = Pull {
                    reference: &reference,
                    name: s.name.as_deref(),
                    dir,
                    locked,
                    trust,
                    options,
                };
                pull.run().await
            }
            Err(e) => Err(DistError::Reference(e)),
        };
        out.push((s.reference.clone(), result));
    }
    out
}

/// `dir/plugins.lock`, or an empty lock when there is none yet.
fn read_lock(dir: &Path) -> Result<LockFile, DistError> {
    match LockFile::read(dir) {
        Ok(lock) => Ok(lock),
        Err(LockError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Ok(LockFile::default())
        }
        Err(e) => Err(DistError::Lock(e)),
    }
}

/// `--locked`: the reference must be pinned for this file, at this manifest.
fn check_locked(lock: &LockFile, file: &str, now: &Source) -> Result<(), DistError> {
    match lock.source(file) {
        Some(pinned) if pinned.reference != now.reference => Err(DistError::Locked(format!(
            "{file} is pinned in {LOCK_FILE} from {}, not {} (--locked): run `wasmhub plugin pull` without --locked to re-pin it",
            pinned.reference, now.reference
        ))),
        Some(pinned) if pinned.manifest_digest != now.manifest_digest => Err(DistError::Locked(format!(
            "{} now points to {}, but {LOCK_FILE} pins {} (--locked): the tag moved; pull without --locked to accept it",
            now.reference, now.manifest_digest, pinned.manifest_digest
        ))),
        Some(_) => Ok(()),
        None => Err(DistError::Locked(format!(
            "{} is not pinned in {LOCK_FILE} for {file} (--locked): pull it once without --locked to pin it",
            now.reference
        ))),
    }
}

/// The signature stored next to the manifest `digest`, when there is one.
async fn fetch_signature(
    registry: &mut RegistryClient,
    manifest_digest: &str,
) -> Result<Option<Signature>, DistError> {
    let Some((manifest, _)) = registry.manifest(&signature_tag(manifest_digest)).await? else {
        return Ok(None);
    };
    let layer = parse_signature(&manifest)?;
    let bytes = registry.blob(&layer.digest).await?;
    Signature::parse(&bytes).map(Some).map_err(DistError::Trust)
}

/// Writes `NAME.wasm.sig`, or removes a stale one when the artifact has none (it
/// would not match the new file).
fn write_signature(wasm: &Path, sig: Option<&Signature>) -> Result<(), DistError> {
    let path = signature_path(wasm);
    match sig {
        Some(sig) => write_atomic(&path, &sig.to_bytes()),
        None => match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(DistError::Io { path, source: e }),
            _ => Ok(()),
        },
    }
}

/// Writes `path` through `.NAME.pull.tmp` beside it and a rename.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), DistError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.pull.tmp"));
    let io = |source| DistError::Io {
        path: path.to_owned(),
        source,
    };
    std::fs::write(&tmp, bytes).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locked_pulls_refuse_moved_tags_naming_both_digests() {
        let (a, b) = (
            format!("sha256:{}", "a".repeat(64)),
            format!("sha256:{}", "b".repeat(64)),
        );
        let reference = "oci://127.0.0.1:5000/text:1.0".to_string();
        let mut lock = LockFile::default();
        let pinned = Source {
            reference: reference.clone(),
            manifest_digest: a.clone(),
        };
        lock.insert_pulled("text.wasm", &"c".repeat(64), pinned.clone());
        assert!(check_locked(&lock, "text.wasm", &pinned).is_ok());
        let moved = Source {
            reference,
            manifest_digest: b.clone(),
        };
        let e = check_locked(&lock, "text.wasm", &moved).unwrap_err().to_string();
        assert!(e.contains(&a) && e.contains(&b) && e.contains("moved"), "{e}");
        let e = check_locked(&lock, "calc.wasm", &moved).unwrap_err().to_string();
        assert!(e.contains("not pinned"), "{e}");
    }
}
