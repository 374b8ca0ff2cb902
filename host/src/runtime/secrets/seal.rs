//! Sealing secret values: AES-256-GCM (ring) under the operator's key, bound to
//! the plugin and the secret's name (the additional data), so a sealed value
//! copied to another plugin or name does not open.
//!
//! Format, version 1 (the first byte; a later version adds a new byte):
//! `0x01 ‖ key id (8 bytes: the first bytes of SHA-256 of the key) ‖ nonce (12
//! random bytes) ‖ ciphertext ‖ tag (16 bytes)`. The key id says "sealed with
//! another key" rather than "corrupt" when the operator changed keys.

use crate::config::SecretsConfig;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use std::fmt;
use std::path::PathBuf;

/// The version byte of the current format.
const VERSION: u8 = 1;
const KEY_ID_LEN: usize = 8;
const HEADER_LEN: usize = 1 + KEY_ID_LEN + NONCE_LEN;
/// Largest key file read (64 hex digits and a newline, generously).
const MAX_KEY_FILE: u64 = 4096;

/// The key secrets are sealed with.
pub struct SealKey {
    key: LessSafeKey,
    id: [u8; KEY_ID_LEN],
}

impl fmt::Debug for SealKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SealKey")
            .field("id", &self.key_id())
            .finish_non_exhaustive()
    }
}

/// Why there is no usable key.
#[derive(Debug)]
pub enum SealKeyError {
    /// `[secrets]` names neither `key_file` nor `key_env`.
    NotConfigured,
    /// `secrets.key_env` names a variable that is not set.
    EnvUnset(String),
    /// `secrets.key_file` cannot be read.
    File {
        /// The key file.
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// The key is not 64 hex digits (where it came from: `secrets.key_file FILE`).
    Malformed(String),
}

impl fmt::Display for SealKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SealKeyError::NotConfigured => f.write_str(
                "no key to seal secrets with: set secrets.key_file (make one with `wasmhub secret keygen FILE`) \
                 or secrets.key_env in the hub's configuration",
            ),
            SealKeyError::EnvUnset(var) => {
                write!(f, "secrets.key_env names {var}, which is not set in the environment")
            }
            SealKeyError::File { path, source } => write!(
                f,
                "secrets.key_file {}: {source} (make a key with `wasmhub secret keygen {}`)",
                path.display(),
                path.display()
            ),
            SealKeyError::Malformed(from) => write!(f, "{from}: the key must be 64 hex digits (32 bytes)"),
        }
    }
}

impl std::error::Error for SealKeyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SealKeyError::File { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Why a sealed value does not open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnsealError {
    /// Too short, or a format version this build does not know.
    Format,
    /// Sealed with the key whose id this is, not the configured one.
    OtherKey(String),
    /// The tag does not match: changed bytes, or moved to another plugin or name.
    Tampered,
}

impl fmt::Display for UnsealError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnsealError::Format => f.write_str("not a sealed value this version of wasmhub reads"),
            UnsealError::OtherKey(id) => write!(
                f,
                "sealed with another key (id {id}); set it again with `wasmhub secret set`, or configure that key"
            ),
            UnsealError::Tampered => f.write_str("the sealed value does not open: it was changed or moved"),
        }
    }
}

impl std::error::Error for UnsealError {}

impl SealKey {
    /// The configured key: read from `key_file` or `key_env` now.
    pub fn from_config(config: &SecretsConfig) -> Result<SealKey, SealKeyError> {
        let (text, from) = match (&config.key_file, &config.key_env) {
            (Some(path), _) => {
                let bytes =
                    super::super::file::read_capped(path, MAX_KEY_FILE).map_err(|e| SealKeyError::File {
                        path: path.clone(),
                        source: std::io::Error::other(e),
                    })?;
                let text = String::from_utf8(bytes)
                    .map_err(|_| SealKeyError::Malformed(format!("secrets.key_file {}", path.display())))?;
                (text, format!("secrets.key_file {}", path.display()))
            }
            (None, Some(var)) => (
                std::env::var(var).map_err(|_| SealKeyError::EnvUnset(var.clone()))?,
                format!("secrets.key_env {var}"),
            ),
            (None, None) => return Err(SealKeyError::NotConfigured),
        };
        let bytes =
            crate::config::decode_hex(text.trim()).ok_or_else(|| SealKeyError::Malformed(from.clone()))?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| SealKeyError::Malformed(from))?;
        Ok(SealKey::from_bytes(&bytes))
    }

    /// A key from its 32 bytes.
    pub fn from_bytes(bytes: &[u8; 32]) -> SealKey {
        let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
        let mut id = [0; KEY_ID_LEN];
        id.copy_from_slice(&digest.as_ref()[..KEY_ID_LEN]);
        let key = UnboundKey::new(&AES_256_GCM, bytes).expect("32 bytes is an AES-256 key");
        SealKey {
            key: LessSafeKey::new(key),
            id,
        }
    }

    /// 64 random hex digits: a new key (`wasmhub secret keygen`).
    pub fn generate_hex() -> String {
        let mut bytes = [0u8; 32];
        SystemRandom::new()
            .fill(&mut bytes)
            .expect("the system's random source works");
        super::super::cache::hex(&bytes)
    }

    /// The key's id, 16 hex digits.
    pub fn key_id(&self) -> String {
        super::super::cache::hex(&self.id)
    }

    /// `value` sealed for `plugin`'s secret `name`.
    pub fn seal(&self, plugin: &str, name: &str, value: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new()
            .fill(&mut nonce)
            .expect("the system's random source works");
        let mut out = Vec::with_capacity(HEADER_LEN + value.len() + AES_256_GCM.tag_len());
        out.push(VERSION);
        out.extend_from_slice(&self.id);
        out.extend_from_slice(&nonce);
        let mut body = value.to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad(plugin, name)),
                &mut body,
            )
            .expect("a value below 64 GiB seals");
        out.extend_from_slice(&body);
        out
    }

    /// The value `sealed` holds, if it was sealed by this key for `plugin`'s `name`.
    pub fn open(&self, plugin: &str, name: &str, sealed: &[u8]) -> Result<Vec<u8>, UnsealError> {
        if sealed.len() < HEADER_LEN + AES_256_GCM.tag_len() || sealed[0] != VERSION {
            return Err(UnsealError::Format);
        }
        let id = &sealed[1..1 + KEY_ID_LEN];
        if id != self.id {
            return Err(UnsealError::OtherKey(super::super::cache::hex(id)));
        }
        let nonce = Nonce::try_assume_unique_for_key(&sealed[1 + KEY_ID_LEN..HEADER_LEN])
            .map_err(|_| UnsealError::Format)?;
        let mut body = sealed[HEADER_LEN..].to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(aad(plugin, name)), &mut body)
            .map_err(|_| UnsealError::Tampered)?;
        Ok(plain.to_vec())
    }
}

/// What a sealed value is bound to.
fn aad(plugin: &str, name: &str) -> Vec<u8> {
    format!("wasmhub-secret\0{plugin}\0{name}").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_open_only_for_their_plugin_name_and_key() {
        let key = SealKey::from_bytes(&[7; 32]);
        let sealed = key.seal("weather", "API_KEY", b"s3cret-value");
        assert_eq!(sealed[0], 1, "versioned");
        assert!(!sealed.windows(6).any(|w| w == b"s3cret"), "no plaintext");
        assert_eq!(key.open("weather", "API_KEY", &sealed).unwrap(), b"s3cret-value");
        assert_eq!(key.open("other", "API_KEY", &sealed), Err(UnsealError::Tampered));
        assert_eq!(
            key.open("weather", "API_KEY2", &sealed),
            Err(UnsealError::Tampered)
        );
        let mut flipped = sealed.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(
            key.open("weather", "API_KEY", &flipped),
            Err(UnsealError::Tampered)
        );
        let other = SealKey::from_bytes(&[8; 32]);
        assert!(matches!(
            other.open("weather", "API_KEY", &sealed),
            Err(UnsealError::OtherKey(id)) if id == key.key_id()
        ));
        assert_eq!(
            key.open("weather", "API_KEY", &sealed[..10]),
            Err(UnsealError::Format)
        );
        assert_ne!(
            sealed,
            key.seal("weather", "API_KEY", b"s3cret-value"),
            "fresh nonce"
        );
    }

    #[test]
    fn keys_come_from_a_file_or_the_environment_or_say_what_is_missing() {
        let dir = crate::test_dir::TempDir::new("seal-key");
        let path = dir.path().join("key");
        std::fs::write(&path, format!("{}\n", SealKey::generate_hex())).unwrap();
        let config = SecretsConfig {
            key_file: Some(path.clone()),
            key_env: None,
            ..SecretsConfig::default()
        };
        assert!(SealKey::from_config(&config).is_ok());
        std::fs::write(&path, "abc").unwrap();
        let err = SealKey::from_config(&config).unwrap_err().to_string();
        assert!(
            err.contains("64 hex digits") && err.contains("secrets.key_file"),
            "{err}"
        );
        let err = SealKey::from_config(&SecretsConfig::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("secrets.key_file") && err.contains("keygen"),
            "{err}"
        );
        let unset = SecretsConfig {
            key_file: None,
            key_env: Some("WASMHUB_TEST_SURELY_UNSET_KEY".into()),
            ..SecretsConfig::default()
        };
        let err = SealKey::from_config(&unset).unwrap_err().to_string();
        assert!(err.contains("WASMHUB_TEST_SURELY_UNSET_KEY"), "{err}");
    }
}
