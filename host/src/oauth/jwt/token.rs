//! A compact JWT (RFC 7519 over RFC 7515's compact serialization): its header,
//! claims and signature, split and decoded. The algorithm is checked here, before
//! any key is looked up, so `none` and HMAC never reach verification: an HMAC
//! "verified" with a public key as its secret is the classic JWT forgery.

use super::{Claims, JwtError, Malformed};
use crate::base64::decode_url;
use serde::Deserialize;

/// The signature algorithms the hub accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Alg {
    /// RSASSA-PKCS1-v1_5 with SHA-256, 2048 to 8192-bit keys.
    Rs256,
    /// ECDSA P-256 with SHA-256, the fixed-width `r||s` signature.
    Es256,
    /// Ed25519.
    EdDsa,
}

impl Alg {
    /// The accepted algorithm named `name`; `None` for every other (`none`, `HS*`, ...).
    pub(crate) fn parse(name: &str) -> Option<Alg> {
        match name {
            "RS256" => Some(Alg::Rs256),
            "ES256" => Some(Alg::Es256),
            "EdDSA" => Some(Alg::EdDsa),
            _ => None,
        }
    }
}

#[derive(Deserialize)]
struct Header {
    alg: String,
    kid: Option<String>,
    crit: Option<serde_json::Value>,
}

/// A decoded compact JWT whose signature is not yet verified. Not `Debug`: it
/// holds the token, which must never reach a log.
pub(crate) struct Compact<'a> {
    /// The header's algorithm, one the hub accepts.
    pub(crate) alg: Alg,
    /// The header's key id, if any.
    pub(crate) kid: Option<String>,
    /// The claims (unverified until [`Compact::verify`] says otherwise).
    pub(crate) claims: Claims,
    /// `header.payload`, what the signature covers.
    signing_input: &'a str,
    signature: Vec<u8>,
}

/// Whether `token` has a JWT's shape (three dot-separated base64url segments), so
/// a verifier can leave other tokens to other verifiers.
pub(crate) fn looks_like_jwt(token: &str) -> bool {
    let segments: Vec<&str> = token.split('.').collect();
    segments.len() == 3
        && segments[..2].iter().all(|s| !s.is_empty())
        && segments.iter().all(|s| {
            s.bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        })
}

impl<'a> Compact<'a> {
    /// Splits and decodes `token`; refuses algorithms outside [`Alg`] before
    /// looking at the claims.
    pub(crate) fn parse(token: &'a str) -> Result<Compact<'a>, JwtError> {
        let malformed = JwtError::Malformed;
        let mut parts = token.split('.');
        let (Some(head), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(malformed(Malformed::Segments));
        };
        let header_bytes = decode_url(head).ok_or(malformed(Malformed::Base64("header")))?;
        let header: Header = serde_json::from_slice(&header_bytes).map_err(|source| {
            malformed(Malformed::Json {
                part: "header",
                source,
            })
        })?;
        let alg = Alg::parse(&header.alg).ok_or(JwtError::RefusedAlgorithm)?;
        if header.crit.is_some() {
            return Err(malformed(Malformed::Critical));
        }
        let payload_bytes = decode_url(payload).ok_or(malformed(Malformed::Base64("claims")))?;
        let claims = Claims::parse(&payload_bytes)?;
        let signature = decode_url(signature).ok_or(malformed(Malformed::Base64("signature")))?;
        let signing_input = &token[..head.len() + 1 + payload.len()];
        Ok(Compact {
            alg,
            kid: header.kid,
            claims,
            signing_input,
            signature,
        })
    }

    /// Whether `key` signed this token with the header's algorithm.
    pub(crate) fn verify(&self, key: &super::PublicKey) -> Result<(), JwtError> {
        if key.alg() != self.alg {
            return Err(JwtError::UnknownKey);
        }
        if key.verifies(self.signing_input.as_bytes(), &self.signature) {
            Ok(())
        } else {
            Err(JwtError::BadSignature)
        }
    }
}
