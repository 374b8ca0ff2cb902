//! Pushing a plugin for authors: the component (and `NAME.toml` beside it, when
//! there is one) as a Wasm OCI artifact under the reference's tag, then
//! `NAME.wasm.sig` (when there is one, and only if it is over this very file) as a
//! signature artifact tagged `sha256-<manifest hex>.sig`, its `subject` the
//! component's manifest.

use super::manifest::{
    Descriptor, OCI_MANIFEST, PLUGIN_TOML_LAYER, WASM_LAYER, plugin_manifest, signature_manifest,
    signature_tag, wasm_config,
};
use super::registry::RegistryClient;
use super::{DistError, Options, Reference};
use crate::runtime::{MAX_SIGNATURE_BYTES, Signature, TrustProblem, manifest_path, signature_path};
use bytes::Bytes;
use std::path::Path;

/// What a push did.
#[derive(Debug)]
pub struct Pushed {
    /// `sha256:<hex>` of the pushed manifest.
    pub manifest_digest: String,
    /// `sha256:<hex>` of the component.
    pub digest: String,
    /// Whether `NAME.toml` went along.
    pub with_manifest: bool,
    /// The key id of the signature pushed beside it, if any.
    pub signed_by: Option<String>,
}

/// Pushes `file` to `reference` (which needs a tag).
pub async fn push(file: &Path, reference: &Reference, options: &Options) -> Result<Pushed, DistError> {
    let Some(tag) = reference.tag.as_deref().filter(|_| reference.digest.is_none()) else {
        return Err(DistError::Protocol(format!(
            "{reference}: a push needs a tag (oci://host/repo:tag) and no digest"
        )));
    };
    let cap = options.max_pull_mb.saturating_mul(1 << 20);
    let wasm = read(file, cap)?.ok_or_else(|| DistError::Io {
        path: file.to_owned(),
        source: std::io::ErrorKind::NotFound.into(),
    })?;
    let toml = read(&manifest_path(file), cap)?;
    let sig = read(&signature_path(file), MAX_SIGNATURE_BYTES)?
        .map(|b| Signature::parse(&b))
        .transpose()
        .map_err(DistError::Trust)?;
    let title = |path: &Path| {
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let wasm_desc = Descriptor::of(WASM_LAYER, &wasm).titled(&title(file));
    if let Some(sig) = &sig
        && sig.digest != wasm_desc.digest
    {
        return Err(DistError::Trust(TrustProblem::DigestMismatch {
            signed: sig.digest.clone(),
            actual: wasm_desc.digest,
        }));
    }
    let mut registry = RegistryClient::new(reference, options)?;
    let config = wasm_config(&wasm_desc);
    registry.push_blob(wasm).await?;
    registry.push_blob(Bytes::from(config.clone())).await?;
    let toml_desc = match toml {
        Some(toml) => {
            let d = Descriptor::of(PLUGIN_TOML_LAYER, &toml).titled(&title(&manifest_path(file)));
            registry.push_blob(toml).await?;
            Some(d)
        }
        None => None,
    };
    let with_manifest = toml_desc.is_some();
    let manifest = plugin_manifest(&config, wasm_desc.clone(), toml_desc).to_bytes();
    let manifest_desc = Descriptor::of(OCI_MANIFEST, &manifest);
    registry
        .push_manifest(tag, OCI_MANIFEST, Bytes::from(manifest))
        .await?;
    let signed_by = match sig {
        Some(sig) => {
            let bytes = Bytes::from(sig.to_bytes());
            registry.push_blob(Bytes::from_static(b"{}")).await?;
            registry.push_blob(bytes.clone()).await?;
            let m = signature_manifest(&bytes, manifest_desc.clone()).to_bytes();
            let tag = signature_tag(&manifest_desc.digest);
            registry.push_manifest(&tag, OCI_MANIFEST, Bytes::from(m)).await?;
            Some(sig.key_id)
        }
        None => None,
    };
    Ok(Pushed {
        manifest_digest: manifest_desc.digest,
        digest: wasm_desc.digest,
        with_manifest,
        signed_by,
    })
}

/// The bytes of `path` within `cap`; `None` when it does not exist.
fn read(path: &Path, cap: u64) -> Result<Option<Bytes>, DistError> {
    use std::io::Read;
    let io = |source| DistError::Io {
        path: path.to_owned(),
        source,
    };
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > cap {
        return Err(DistError::TooLarge {
            what: path.display().to_string(),
            limit_mb: cap >> 20,
        });
    }
    Ok(Some(Bytes::from(bytes)))
}
