//! The OCI image manifests the hub reads and writes: a plugin in the Wasm OCI
//! artifact layout the Bytecode Alliance tools use (config
//! `application/vnd.wasm.config.v0+json`, one `application/wasm` layer) plus an
//! optional capability-manifest layer of ours, and a signature artifact (one layer,
//! the `NAME.wasm.sig` JSON) whose `subject` is the plugin's manifest, stored under
//! the cosign-style tag `sha256-<hex>.sig`.

use super::DistError;
use serde::{Deserialize, Serialize};

/// An OCI image manifest.
pub(super) const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// The Wasm OCI artifact's config.
pub const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
/// The component layer.
pub const WASM_LAYER: &str = "application/wasm";
/// Our capability-manifest layer (`NAME.toml`).
pub const PLUGIN_TOML_LAYER: &str = "application/vnd.wasmhub.plugin.manifest.v1+toml";
/// The signature artifact's type and its layer's media type.
pub const SIGNATURE_LAYER: &str = "application/vnd.wasmhub.signature.v1+json";
/// OCI's empty config (`{}`), for artifacts that need none.
pub(super) const EMPTY_CONFIG: &str = "application/vnd.oci.empty.v1+json";
/// The media types a manifest request accepts.
pub(super) const ACCEPT: &str =
    "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";

/// A content descriptor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Descriptor {
    /// What the content is.
    pub(super) media_type: String,
    /// `sha256:<hex>` of the content.
    pub(super) digest: String,
    /// Its length in bytes.
    pub(super) size: u64,
    /// `org.opencontainers.image.title` (the file name clients like oras save it as).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) annotations: Option<std::collections::BTreeMap<String, String>>,
}

impl Descriptor {
    /// The descriptor of `bytes` as `media_type`.
    pub(super) fn of(media_type: &str, bytes: &[u8]) -> Descriptor {
        Descriptor {
            media_type: media_type.into(),
            digest: digest_of(bytes),
            size: bytes.len() as u64,
            annotations: None,
        }
    }

    /// The same descriptor titled `file_name`.
    pub(super) fn titled(mut self, file_name: &str) -> Descriptor {
        let title = (
            "org.opencontainers.image.title".to_string(),
            file_name.to_string(),
        );
        self.annotations = Some([title].into());
        self
    }
}

/// `sha256:<hex>` of `bytes`.
pub(super) fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", crate::runtime::sha256_hex(bytes))
}

/// An image manifest (the fields the hub uses; others are ignored on read).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ImageManifest {
    /// Always 2.
    pub(super) schema_version: u32,
    /// [`OCI_MANIFEST`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) media_type: Option<String>,
    /// The artifact type, for artifacts with the empty config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) artifact_type: Option<String>,
    /// The config blob.
    pub(super) config: Descriptor,
    /// The layers, in order.
    pub(super) layers: Vec<Descriptor>,
    /// The manifest this one is about (a signature's plugin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) subject: Option<Descriptor>,
}

impl ImageManifest {
    fn new(config: Descriptor, layers: Vec<Descriptor>) -> ImageManifest {
        ImageManifest {
            schema_version: 2,
            media_type: Some(OCI_MANIFEST.into()),
            artifact_type: None,
            config,
            layers,
            subject: None,
        }
    }

    /// The manifest's bytes as pushed.
    pub(super) fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a manifest serializes")
    }
}

/// What a plugin's manifest points at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct PluginArtifact {
    /// The component.
    pub(super) wasm: Descriptor,
    /// The capability manifest, when the author shipped one.
    pub(super) toml: Option<Descriptor>,
}

/// The config blob of a component: `{"architecture": "wasm", "os": "wasip2", "layerDigests": […]}`.
pub(super) fn wasm_config(wasm: &Descriptor) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [wasm.digest],
    }))
    .expect("JSON serializes")
}

/// The manifest of a plugin: the Wasm config, the component, and the optional
/// capability manifest.
pub(super) fn plugin_manifest(config: &[u8], wasm: Descriptor, toml: Option<Descriptor>) -> ImageManifest {
    let mut layers = vec![wasm];
    layers.extend(toml);
    ImageManifest::new(Descriptor::of(WASM_CONFIG, config), layers)
}

/// The manifest of a signature of the plugin manifest `subject`.
pub(super) fn signature_manifest(signature: &[u8], subject: Descriptor) -> ImageManifest {
    let mut m = ImageManifest::new(
        Descriptor::of(EMPTY_CONFIG, b"{}"),
        vec![Descriptor::of(SIGNATURE_LAYER, signature)],
    );
    m.artifact_type = Some(SIGNATURE_LAYER.into());
    m.subject = Some(subject);
    m
}

/// The tag a signature of the manifest `digest` is stored under (cosign's naming).
pub fn signature_tag(manifest_digest: &str) -> String {
    format!("{}.sig", manifest_digest.replace(':', "-"))
}

/// Reads a plugin's manifest: the Wasm config media type and exactly one
/// `application/wasm` layer; the error says what it is instead.
pub(super) fn parse_plugin(bytes: &[u8]) -> Result<PluginArtifact, DistError> {
    let m: ImageManifest = serde_json::from_slice(bytes)
        .map_err(|e| DistError::NotAPlugin(format!("not an image manifest: {e}")))?;
    if m.config.media_type != WASM_CONFIG {
        return Err(DistError::NotAPlugin(format!(
            "its config media type is {:?}, not {WASM_CONFIG:?} (a Wasm component artifact)",
            m.config.media_type
        )));
    }
    let wasm: Vec<&Descriptor> = m.layers.iter().filter(|l| l.media_type == WASM_LAYER).collect();
    let [wasm] = wasm.as_slice() else {
        return Err(DistError::NotAPlugin(format!(
            "it has {} {WASM_LAYER} layers; a plugin has exactly one",
            wasm.len()
        )));
    };
    let toml = m
        .layers
        .iter()
        .find(|l| l.media_type == PLUGIN_TOML_LAYER)
        .cloned();
    Ok(PluginArtifact {
        wasm: (*wasm).clone(),
        toml,
    })
}

/// The signature layer of a signature artifact's manifest.
pub(super) fn parse_signature(bytes: &[u8]) -> Result<Descriptor, DistError> {
    let m: ImageManifest = serde_json::from_slice(bytes).map_err(|e| {
        DistError::NotAPlugin(format!("the signature artifact is not an image manifest: {e}"))
    })?;
    m.layers
        .into_iter()
        .find(|l| l.media_type == SIGNATURE_LAYER)
        .ok_or_else(|| {
            DistError::NotAPlugin(format!("the signature artifact has no {SIGNATURE_LAYER} layer"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_manifests_round_trip_and_others_are_refused_with_the_reason() {
        let wasm = Descriptor::of(WASM_LAYER, b"\0asm");
        let toml = Descriptor::of(PLUGIN_TOML_LAYER, b"[network]\n");
        let config = wasm_config(&wasm);
        let m = plugin_manifest(&config, wasm.clone(), Some(toml.clone()));
        let bytes = m.to_bytes();
        let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(json["config"]["mediaType"], WASM_CONFIG);
        assert_eq!(json["layers"][0]["mediaType"], WASM_LAYER);
        assert_eq!(json["schemaVersion"], 2);
        let parsed = parse_plugin(&bytes).unwrap();
        assert_eq!(
            parsed,
            PluginArtifact {
                wasm: wasm.clone(),
                toml: Some(toml)
            }
        );

        let image = br#"{"schemaVersion":2,"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:00","size":1},"layers":[]}"#;
        assert!(
            parse_plugin(image)
                .unwrap_err()
                .to_string()
                .contains("config media type")
        );
        let two = plugin_manifest(&config, wasm.clone(), Some(wasm.clone())).to_bytes();
        assert!(
            parse_plugin(&two)
                .unwrap_err()
                .to_string()
                .contains("2 application/wasm layers")
        );

        let sig = signature_manifest(b"{\"x\":1}", Descriptor::of(OCI_MANIFEST, &bytes));
        let layer = parse_signature(&sig.to_bytes()).unwrap();
        assert_eq!(layer.digest, digest_of(b"{\"x\":1}"));
        assert_eq!(signature_tag("sha256:abc"), "sha256-abc.sig");
    }
}
