//! Plugin signatures: Ed25519 (ring) over a plugin file's sha256, kept beside it as
//! `NAME.wasm.sig`, and the operator's [`TrustPolicy`] (`[trust]`: trusted keys,
//! revoked keys, whether a signature is required) that the loader applies to every
//! load and reload, and `plugin pull` to what it fetched.
//!
//! A signature file is one JSON object, `{"format", "digest", "key_id",
//! "signature"}`; the signed message is [`SIGNED_PREFIX`] followed by
//! `sha256:<hex>`, so a signature cannot be replayed as anything else. A key id is
//! the first 16 hex digits of the sha256 of the 32-byte public key: short, stable,
//! and the same wherever the key is written.

use super::cache::{hex, sha256_hex};
use super::file::ReadError;
use crate::config::{
    PUBLIC_KEY_PREFIX, PublicKeyError, TrustConfig, decode_hex, is_key_id, parse_public_key,
};
use ring::signature::{ED25519, Ed25519KeyPair, KeyPair, UnparsedPublicKey};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

/// The `format` of a signature file.
pub const SIGNATURE_FORMAT: &str = "wasmhub-signature-v1";
/// What precedes `sha256:<hex>` in the signed message (domain separation).
const SIGNED_PREFIX: &str = "wasmhub plugin signature v1\n";
/// The prefix of a private key file's only line.
const PRIVATE_KEY_PREFIX: &str = "ed25519-pkcs8:";
/// Largest signature file read, in bytes.
pub const MAX_SIGNATURE_BYTES: u64 = 4096;

/// The signature file of a plugin: `NAME.wasm.sig` beside `NAME.wasm`.
pub fn signature_path(wasm: &Path) -> PathBuf {
    let mut name = wasm.as_os_str().to_owned();
    name.push(".sig");
    PathBuf::from(name)
}

/// The key id of a 32-byte Ed25519 public key: 16 hex digits of its sha256.
pub fn key_id(public_key: &[u8]) -> String {
    sha256_hex(public_key)[..16].to_string()
}

/// A detached signature, as stored in `NAME.wasm.sig` and pushed to a registry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signature {
    /// Always [`SIGNATURE_FORMAT`].
    pub format: String,
    /// What was signed: `sha256:<hex>` of the plugin file.
    pub digest: String,
    /// Which key signed it.
    pub key_id: String,
    /// The Ed25519 signature, hex.
    pub signature: String,
}

impl Signature {
    /// Parses a signature file's bytes.
    pub fn parse(bytes: &[u8]) -> Result<Signature, TrustProblem> {
        let sig: Signature = serde_json::from_slice(bytes).map_err(TrustProblem::Malformed)?;
        if sig.format != SIGNATURE_FORMAT {
            return Err(TrustProblem::Format(sig.format));
        }
        Ok(sig)
    }

    /// The file's text: the JSON object and a newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec(self).expect("a signature serializes");
        out.push(b'\n');
        out
    }
}

/// A signing key (`wasmhub plugin keygen` writes one).
pub struct SigningKey {
    pair: Ed25519KeyPair,
}

/// Why a key could not be made, read or used.
#[derive(Debug)]
pub enum SigningKeyError {
    /// The system's random source failed.
    Random,
    /// The key file is not `ed25519-pkcs8:<hex>` of a valid key.
    Malformed(String),
}

impl fmt::Display for SigningKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SigningKeyError::Random => f.write_str("the system random source failed"),
            SigningKeyError::Malformed(why) => write!(f, "not a wasmhub signing key: {why}"),
        }
    }
}

impl std::error::Error for SigningKeyError {}

impl SigningKey {
    /// A new random key and its private key file's text.
    pub fn generate() -> Result<(SigningKey, String), SigningKeyError> {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).map_err(|_| SigningKeyError::Random)?;
        let text = format!("{PRIVATE_KEY_PREFIX}{}\n", hex(pkcs8.as_ref()));
        Ok((SigningKey::parse(&text)?, text))
    }

    /// Reads a private key file's text.
    pub fn parse(text: &str) -> Result<SigningKey, SigningKeyError> {
        let hex = text
            .trim()
            .strip_prefix(PRIVATE_KEY_PREFIX)
            .ok_or_else(|| SigningKeyError::Malformed(format!("expected {PRIVATE_KEY_PREFIX}<hex>")))?;
        let der = decode_hex(hex).ok_or_else(|| SigningKeyError::Malformed("the key is not hex".into()))?;
        let pair = Ed25519KeyPair::from_pkcs8(&der).map_err(|e| SigningKeyError::Malformed(e.to_string()))?;
        Ok(SigningKey { pair })
    }

    /// The public key, `ed25519:<hex>` (what `[trust] keys` lists).
    pub fn public_key(&self) -> String {
        format!("{PUBLIC_KEY_PREFIX}{}", hex(self.pair.public_key().as_ref()))
    }

    /// This key's id.
    pub fn key_id(&self) -> String {
        key_id(self.pair.public_key().as_ref())
    }

    /// Signs the file whose sha256 is `digest_hex`.
    pub fn sign(&self, digest_hex: &str) -> Signature {
        let digest = format!("sha256:{digest_hex}");
        let sig = self.pair.sign(signed_message(&digest).as_bytes());
        Signature {
            format: SIGNATURE_FORMAT.into(),
            digest,
            key_id: self.key_id(),
            signature: hex(sig.as_ref()),
        }
    }
}

fn signed_message(digest: &str) -> String {
    format!("{SIGNED_PREFIX}{digest}")
}

/// Why a plugin's signature is not accepted.
#[derive(Debug)]
pub enum TrustProblem {
    /// `[trust] require_signed` and there is no `NAME.wasm.sig`.
    Unsigned,
    /// The signature file could not be read.
    Read(std::io::Error),
    /// The signature file is larger than [`MAX_SIGNATURE_BYTES`].
    TooLarge,
    /// The signature file is not the JSON object of a signature.
    Malformed(serde_json::Error),
    /// An unknown `format`.
    Format(String),
    /// The signature is over another file.
    DigestMismatch {
        /// `sha256:<hex>` the signature is over.
        signed: String,
        /// `sha256:<hex>` of the file.
        actual: String,
    },
    /// The signer is revoked (`[trust] revoked`).
    Revoked {
        /// The signer's key id.
        key_id: String,
    },
    /// The signer is not one of `[trust] keys`.
    UnknownKey {
        /// The signer's key id.
        key_id: String,
    },
    /// The signature does not verify with the key it names.
    BadSignature {
        /// The key it was checked against.
        key_id: String,
    },
}

impl fmt::Display for TrustProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrustProblem::Unsigned => f.write_str(
                "unsigned: [trust] require_signed is on and there is no NAME.wasm.sig beside the file; \
                 sign it with `wasmhub plugin sign FILE --key KEY` or pull it with its signature",
            ),
            TrustProblem::Read(e) => write!(f, "cannot read the signature file: {e}"),
            TrustProblem::TooLarge => {
                write!(f, "the signature file is larger than {MAX_SIGNATURE_BYTES} bytes")
            }
            TrustProblem::Malformed(e) => write!(f, "the signature file is not a wasmhub signature: {e}"),
            TrustProblem::Format(v) => write!(
                f,
                "the signature file has format {v:?}; this hub reads {SIGNATURE_FORMAT:?}"
            ),
            TrustProblem::DigestMismatch { signed, actual } => write!(
                f,
                "signature mismatch: the signature is over {signed} but the file is {actual} \
                 (the file changed after it was signed)"
            ),
            TrustProblem::Revoked { key_id } => {
                write!(f, "signed by key {key_id}, which is revoked ([trust] revoked)")
            }
            TrustProblem::UnknownKey { key_id } => {
                write!(f, "signed by key {key_id}, which is not in [trust] keys")
            }
            TrustProblem::BadSignature { key_id } => write!(
                f,
                "bad signature: it does not verify with key {key_id} (forged or corrupted)"
            ),
        }
    }
}

impl std::error::Error for TrustProblem {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TrustProblem::Read(e) => Some(e),
            TrustProblem::Malformed(e) => Some(e),
            _ => None,
        }
    }
}

/// A `[trust]` entry that is not a public key (or, in `revoked`, a key id).
#[derive(Debug)]
pub struct TrustKeyError {
    /// The entry as configured.
    pub entry: String,
    /// What is wrong with it.
    pub reason: PublicKeyError,
}

impl fmt::Display for TrustKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} is not a public key: {}", self.entry, self.reason)
    }
}

impl std::error::Error for TrustKeyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.reason)
    }
}

/// `text` as a public key, or the error naming it.
fn public_key(text: &str) -> Result<[u8; 32], TrustKeyError> {
    parse_public_key(text).map_err(|reason| TrustKeyError {
        entry: text.to_string(),
        reason,
    })
}

/// The operator's `[trust]`, with every key parsed.
#[derive(Clone, Debug, Default)]
pub struct TrustPolicy {
    /// Trusted public keys by key id.
    keys: Vec<(String, [u8; 32])>,
    /// Revoked key ids.
    revoked: Vec<String>,
    require_signed: bool,
}

impl TrustPolicy {
    /// The policy of `[trust]`; the error names the key that is not one.
    pub fn new(config: &TrustConfig) -> Result<TrustPolicy, TrustKeyError> {
        let mut keys = Vec::new();
        for text in &config.keys {
            let key = public_key(text)?;
            keys.push((key_id(&key), key));
        }
        let mut revoked = Vec::new();
        for text in &config.revoked {
            match is_key_id(text) {
                true => revoked.push(text.clone()),
                false => revoked.push(key_id(&public_key(text)?)),
            }
        }
        Ok(TrustPolicy {
            keys,
            revoked,
            require_signed: config.require_signed,
        })
    }

    /// Whether any signature check applies: a signature is required, or keys are
    /// configured (then a signature that is present must be good).
    pub fn is_active(&self) -> bool {
        self.require_signed || !self.keys.is_empty()
    }

    /// Checks `sig` (when there is one) for the file whose sha256 is `digest_hex`;
    /// `Ok(Some(key id))` when a trusted key signed it, `Ok(None)` when unsigned and
    /// no signature is required, or when no `[trust]` applies at all.
    pub fn check(&self, digest_hex: &str, sig: Option<&Signature>) -> Result<Option<String>, TrustProblem> {
        if !self.is_active() {
            return Ok(None);
        }
        let Some(sig) = sig else {
            return match self.require_signed {
                true => Err(TrustProblem::Unsigned),
                false => Ok(None),
            };
        };
        let actual = format!("sha256:{digest_hex}");
        if sig.digest != actual {
            return Err(TrustProblem::DigestMismatch {
                signed: sig.digest.clone(),
                actual,
            });
        }
        let key_id = sig.key_id.clone();
        if self.revoked.contains(&key_id) {
            return Err(TrustProblem::Revoked { key_id });
        }
        let Some((_, key)) = self.keys.iter().find(|(id, _)| *id == key_id) else {
            return Err(TrustProblem::UnknownKey { key_id });
        };
        let bytes = decode_hex(&sig.signature).ok_or(TrustProblem::BadSignature {
            key_id: key_id.clone(),
        })?;
        UnparsedPublicKey::new(&ED25519, key)
            .verify(signed_message(&sig.digest).as_bytes(), &bytes)
            .map_err(|_| TrustProblem::BadSignature {
                key_id: key_id.clone(),
            })?;
        Ok(Some(key_id))
    }

    /// Reads `NAME.wasm.sig` beside `wasm` (if any) and [checks](TrustPolicy::check) it.
    pub fn check_file(&self, wasm: &Path, digest_hex: &str) -> Result<Option<String>, TrustProblem> {
        if !self.is_active() {
            return Ok(None);
        }
        let path = signature_path(wasm);
        let bytes = match super::file::read_capped(&path, MAX_SIGNATURE_BYTES) {
            Ok(bytes) => Some(bytes),
            Err(ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(ReadError::Io(e)) => return Err(TrustProblem::Read(e)),
            Err(ReadError::TooLarge { .. }) => return Err(TrustProblem::TooLarge),
            Err(e) => return Err(TrustProblem::Read(std::io::Error::other(e))),
        };
        let sig = bytes.map(|b| Signature::parse(&b)).transpose()?;
        self.check(digest_hex, sig.as_ref())
    }
}

#[cfg(test)]
#[path = "trust_tests.rs"]
mod tests;
