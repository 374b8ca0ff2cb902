//! `[plugins]` (the OCI references every replica pulls: `[[plugins.sources]]`) and
//! `[trust]` (the Ed25519 keys plugin signatures must come from). The shape of the
//! file and the syntax of a public key live here; pulling is `distribution`'s,
//! checking signatures `runtime::trust`'s.

use serde::Deserialize;

/// `[plugins]`: where plugins come from besides files dropped into the folder.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PluginsConfig {
    /// OCI references pulled into the plugins folder at `serve` start and on
    /// `wasmhub plugin sync`.
    pub sources: Vec<SourceConfig>,
    /// Allow plain HTTP to registries that are not on a loopback address.
    pub insecure_http: bool,
    /// Largest registry response (manifest, token, blob) read, in MiB.
    pub max_pull_mb: u64,
    /// Longest one registry request may take, in seconds.
    pub pull_timeout_secs: u64,
}

impl Default for PluginsConfig {
    fn default() -> Self {
        PluginsConfig {
            sources: Vec::new(),
            insecure_http: false,
            max_pull_mb: DEFAULT_MAX_PULL_MB,
            pull_timeout_secs: 60,
        }
    }
}

/// One `[[plugins.sources]]` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    /// `oci://host[:port]/repo:tag` or `oci://host[:port]/repo@sha256:…`.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The plugin name (file stem) to write; default: the repository's last segment.
    #[serde(default)]
    pub name: Option<String>,
}

/// `[trust]`: which signers plugins must come from.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrustConfig {
    /// Trusted public keys, `ed25519:<64 hex digits>` (`wasmhub plugin keygen` prints one).
    pub keys: Vec<String>,
    /// Revoked keys: a public key as in `keys`, or its 16-hex-digit key id. A
    /// signature by one is refused even when the key is also in `keys`.
    pub revoked: Vec<String>,
    /// Refuse (`rejected`) every plugin without a valid signature by a trusted key.
    pub require_signed: bool,
}

/// The default `plugins.max_pull_mb`: the default `limits.max_plugin_mb`.
const DEFAULT_MAX_PULL_MB: u64 = 64;

/// The prefix of a public key's text form.
pub const PUBLIC_KEY_PREFIX: &str = "ed25519:";

/// Why a text is not a public key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublicKeyError {
    /// It does not start with `ed25519:`.
    NoPrefix(String),
    /// What follows the prefix is not hex.
    NotHex(String),
    /// The key has another length than 32 bytes.
    Length {
        /// The key as configured.
        text: String,
        /// Its length in bytes.
        bytes: usize,
    },
}

impl std::fmt::Display for PublicKeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PublicKeyError::NoPrefix(text) => write!(
                f,
                "{text:?} is not a public key: expected {PUBLIC_KEY_PREFIX}<64 hex digits>"
            ),
            PublicKeyError::NotHex(text) => write!(f, "{text:?}: the key is not hex"),
            PublicKeyError::Length { text, bytes } => {
                write!(f, "{text:?}: an Ed25519 public key is 32 bytes, this is {bytes}")
            }
        }
    }
}

impl std::error::Error for PublicKeyError {}

/// The 32 bytes of `ed25519:<64 hex digits>`; the error says what is wrong.
pub fn parse_public_key(text: &str) -> Result<[u8; 32], PublicKeyError> {
    let hex = text
        .trim()
        .strip_prefix(PUBLIC_KEY_PREFIX)
        .ok_or_else(|| PublicKeyError::NoPrefix(text.to_string()))?;
    let bytes = decode_hex(hex).ok_or_else(|| PublicKeyError::NotHex(text.to_string()))?;
    bytes.try_into().map_err(|b: Vec<u8>| PublicKeyError::Length {
        text: text.to_string(),
        bytes: b.len(),
    })
}

/// Lowercase or uppercase hex into bytes; `None` when not hex of even length.
pub fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Whether `text` is a key id: 16 lowercase hex digits.
pub fn is_key_id(text: &str) -> bool {
    text.len() == 16
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl TrustConfig {
    /// The first key that is not a public key (or, in `revoked`, a key id).
    pub(super) fn first_mismatch(&self) -> Option<String> {
        for key in &self.keys {
            if let Err(e) = parse_public_key(key) {
                return Some(format!("trust.keys: {e}"));
            }
        }
        for key in &self.revoked {
            if !is_key_id(key)
                && let Err(e) = parse_public_key(key)
            {
                return Some(format!("trust.revoked: {e}, or a 16-hex-digit key id"));
            }
        }
        if self.require_signed && self.keys.is_empty() {
            return Some("trust.require_signed = true needs at least one key in trust.keys".into());
        }
        None
    }
}

impl PluginsConfig {
    /// The first source that is not an `oci://` reference or names a bad plugin.
    pub(super) fn first_mismatch(&self) -> Option<String> {
        if self.max_pull_mb == 0 || self.pull_timeout_secs == 0 {
            return Some("plugins.max_pull_mb and plugins.pull_timeout_secs must be greater than 0".into());
        }
        for (i, s) in self.sources.iter().enumerate() {
            if !s.reference.starts_with("oci://") {
                return Some(format!(
                    "plugins.sources[{i}]: ref {:?} must start with oci://",
                    s.reference
                ));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_and_trust_read_from_the_file_and_mistakes_name_the_key() {
        let key = format!("ed25519:{}", "ab".repeat(32));
        let text = format!(
            "[plugins]\nmax_pull_mb = 8\n[[plugins.sources]]\nref = \"oci://127.0.0.1:5000/text:1.0\"\n\
             [[plugins.sources]]\nref = \"oci://reg.example/x/calc@sha256:{}\"\nname = \"calc\"\n\
             [trust]\nkeys = [\"{key}\"]\nrevoked = [\"0123456789abcdef\"]\nrequire_signed = true\n",
            "a".repeat(64)
        );
        let config = crate::config::Config::parse(&text, std::path::Path::new("w.toml")).unwrap();
        assert_eq!(config.plugins.sources.len(), 2);
        assert_eq!(config.plugins.sources[1].name.as_deref(), Some("calc"));
        assert_eq!(
            (config.plugins.max_pull_mb, config.plugins.pull_timeout_secs),
            (8, 60)
        );
        assert!(config.trust.require_signed);
        let e = crate::config::Config::parse("[plugins]\nsource = []\n", std::path::Path::new("w.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("source"), "{e}");
        let e = crate::config::Config::parse(
            "[[plugins.sources]]\nref = \"docker://x/y\"\n",
            std::path::Path::new("w.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("plugins.sources[0]: ref \"docker://x/y\" must start with oci://"),
            "{e}"
        );
    }

    #[test]
    fn public_keys_and_key_ids_parse() {
        let key = format!("ed25519:{}", "ab".repeat(32));
        assert_eq!(parse_public_key(&key).unwrap(), [0xab; 32]);
        assert!(
            parse_public_key("ed25519:abcd")
                .unwrap_err()
                .to_string()
                .contains("32 bytes")
        );
        assert!(
            parse_public_key("rsa:00")
                .unwrap_err()
                .to_string()
                .contains("expected ed25519:")
        );
        assert!(
            parse_public_key("ed25519:zz")
                .unwrap_err()
                .to_string()
                .contains("not hex")
        );
        assert!(is_key_id("0123456789abcdef"));
        assert!(!is_key_id("0123456789ABCDEF"));
        let trust = TrustConfig {
            revoked: vec!["nope".into()],
            ..TrustConfig::default()
        };
        assert!(trust.first_mismatch().unwrap().starts_with("trust.revoked"));
        let trust = TrustConfig {
            require_signed: true,
            ..TrustConfig::default()
        };
        assert!(trust.first_mismatch().unwrap().contains("at least one key"));
    }
}
