//! A JSON Web Key Set (RFC 7517) as issuers publish it at their `jwks_uri`: the
//! signing keys the hub can use (RSA; EC P-256; OKP Ed25519), and verification
//! with `ring`. Keys of other types or curves, and keys marked for encryption,
//! are skipped: a set may hold them for other relying parties.

use super::Alg;
use crate::base64::decode_url;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, ED25519, RSA_PKCS1_2048_8192_SHA256, RsaPublicKeyComponents, UnparsedPublicKey,
};
use serde::Deserialize;
use std::fmt;

/// A public key the hub can verify with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PublicKey {
    /// RSA modulus and exponent, big-endian.
    Rsa { n: Vec<u8>, e: Vec<u8> },
    /// A P-256 point, uncompressed (`04||x||y`), as `ring` takes it.
    P256(Vec<u8>),
    /// An Ed25519 public key.
    Ed25519(Vec<u8>),
}

impl PublicKey {
    /// The one algorithm this key verifies.
    pub(crate) fn alg(&self) -> Alg {
        match self {
            PublicKey::Rsa { .. } => Alg::Rs256,
            PublicKey::P256(_) => Alg::Es256,
            PublicKey::Ed25519(_) => Alg::EdDsa,
        }
    }

    /// Whether `signature` is this key's over `message`.
    pub(crate) fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        match self {
            PublicKey::Rsa { n, e } => RsaPublicKeyComponents { n, e }
                .verify(&RSA_PKCS1_2048_8192_SHA256, message, signature)
                .is_ok(),
            PublicKey::P256(point) => UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
                .verify(message, signature)
                .is_ok(),
            PublicKey::Ed25519(x) => UnparsedPublicKey::new(&ED25519, x)
                .verify(message, signature)
                .is_ok(),
        }
    }
}

/// One usable key of a set.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Jwk {
    kid: Option<String>,
    key: PublicKey,
}

/// The usable keys of a JSON Web Key Set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Jwks {
    keys: Vec<Jwk>,
}

/// Why a key set cannot be used.
#[derive(Debug)]
pub(crate) enum JwksError {
    /// Not a JSON object with a `keys` array.
    Json(serde_json::Error),
    /// A key of a supported type lacks a member or has one that is not valid.
    Key {
        /// The key's `kid`, if it has one.
        kid: Option<String>,
        /// The member.
        member: &'static str,
    },
}

impl fmt::Display for JwksError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JwksError::Json(e) => write!(f, "the key set is not a JSON Web Key Set: {e}"),
            JwksError::Key { kid, member } => write!(
                f,
                "key {} of the key set has no valid {member:?}",
                kid.as_deref().unwrap_or("without a kid")
            ),
        }
    }
}

impl std::error::Error for JwksError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            JwksError::Json(e) => Some(e),
            JwksError::Key { .. } => None,
        }
    }
}

#[derive(Deserialize)]
struct RawSet {
    keys: Vec<RawKey>,
}

#[derive(Deserialize)]
struct RawKey {
    kty: String,
    kid: Option<String>,
    #[serde(rename = "use")]
    usage: Option<String>,
    alg: Option<String>,
    crv: Option<String>,
    n: Option<String>,
    e: Option<String>,
    x: Option<String>,
    y: Option<String>,
}

impl RawKey {
    fn member(
        &self,
        name: &'static str,
        value: &Option<String>,
        len: Option<usize>,
    ) -> Result<Vec<u8>, JwksError> {
        value
            .as_deref()
            .and_then(decode_url)
            .filter(|b| !b.is_empty() && len.is_none_or(|l| b.len() == l))
            .ok_or_else(|| JwksError::Key {
                kid: self.kid.clone(),
                member: name,
            })
    }

    /// The key, `None` for one the hub cannot use (type, curve, use or alg).
    fn key(&self) -> Result<Option<PublicKey>, JwksError> {
        if self.usage.as_deref().is_some_and(|u| u != "sig") {
            return Ok(None);
        }
        let key = match (self.kty.as_str(), self.crv.as_deref()) {
            ("RSA", _) => PublicKey::Rsa {
                n: self.member("n", &self.n, None)?,
                e: self.member("e", &self.e, None)?,
            },
            ("EC", Some("P-256")) => {
                let mut point = vec![4];
                point.extend(self.member("x", &self.x, Some(32))?);
                point.extend(self.member("y", &self.y, Some(32))?);
                PublicKey::P256(point)
            }
            ("OKP", Some("Ed25519")) => PublicKey::Ed25519(self.member("x", &self.x, Some(32))?),
            _ => return Ok(None),
        };
        // A key that names an algorithm is only for that one (RFC 7517 §4.4).
        match self.alg.as_deref() {
            Some(alg) if Alg::parse(alg) != Some(key.alg()) => Ok(None),
            _ => Ok(Some(key)),
        }
    }
}

impl Jwks {
    /// The usable keys of a JWKS document.
    pub(crate) fn parse(document: &[u8]) -> Result<Jwks, JwksError> {
        let raw: RawSet = serde_json::from_slice(document).map_err(JwksError::Json)?;
        let mut keys = Vec::new();
        for k in &raw.keys {
            if let Some(key) = k.key()? {
                keys.push(Jwk {
                    kid: k.kid.clone(),
                    key,
                });
            }
        }
        Ok(Jwks { keys })
    }

    /// How many usable keys the set has.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// The key for a token signed with `alg` under `kid`: the key with that id; or,
    /// for a token without one, the set's only key for `alg` (more would be a guess).
    pub(crate) fn find(&self, kid: Option<&str>, alg: Alg) -> Option<&PublicKey> {
        let mut matching = self
            .keys
            .iter()
            .filter(|k| k.key.alg() == alg && (kid.is_none() || k.kid.as_deref() == kid));
        let first = matching.next()?;
        match (kid, matching.next()) {
            (None, Some(_)) => None,
            _ => Some(&first.key),
        }
    }
}
