//! JWT access tokens from external identity providers (`[[oauth.issuers]]`):
//! compact serialization, the issuer's published keys and the claim checks. No
//! JOSE crate (the dependency budget): `ring` verifies the three signature
//! algorithms the hub accepts, and everything else is a few lines of JSON.
//!
//! - `token`: parsing a compact JWT, the algorithm allowlist;
//! - `jwks`: a JSON Web Key Set's RSA, P-256 and Ed25519 keys, and verification;
//! - `claims`: `iss`, `aud`, `exp` and `nbf` against what the hub expects;
//! - `keys`: an issuer's key set, discovered, cached and refetched (rate limited);
//! - `fetch`: the documents over the outbound HTTP client, bounded;
//! - `verifier`: [`JwtIssuers`], the hub's token verifier for the issuers.
//!
//! Every refusal is a [`JwtError`], which says why without the token.

mod claims;
mod fetch;
mod jwks;
mod keys;
mod token;
mod verifier;

#[cfg(test)]
mod tests;

pub(crate) use claims::{Claims, Expect};
pub(crate) use fetch::{Fetch, HttpFetch};
pub(crate) use jwks::{Jwks, JwksError, PublicKey};
pub(crate) use keys::{IssuerKeys, KeyPolicy, Lookup};
pub(crate) use token::{Alg, Compact, looks_like_jwt};
pub(crate) use verifier::JwtIssuers;

use crate::hub::Rejection;
use std::fmt;

/// Which part of a compact JWT was not what it should be.
#[derive(Debug)]
pub(crate) enum Malformed {
    /// Not three dot-separated segments.
    Segments,
    /// A segment is not base64url.
    Base64(&'static str),
    /// The header or the claims are not a JSON object of the expected shape.
    Json {
        part: &'static str,
        source: serde_json::Error,
    },
    /// A claim the hub needs is missing or of the wrong type.
    Claim(&'static str),
    /// The header names critical extensions (`crit`), none of which the hub implements.
    Critical,
}

/// Why a JWT is refused.
#[derive(Debug)]
pub(crate) enum JwtError {
    /// Not a well-formed JWT.
    Malformed(Malformed),
    /// `alg` is `none`, HMAC, or anything else than RS256, ES256 and EdDSA.
    RefusedAlgorithm,
    /// No published key has the token's `kid` (and algorithm).
    UnknownKey,
    /// The signature does not verify with the key.
    BadSignature,
    /// `iss` is not the configured issuer.
    WrongIssuer,
    /// `aud` does not name the resource.
    WrongAudience,
    /// `exp` is past (beyond the allowed skew).
    Expired,
    /// `nbf` is ahead (beyond the allowed skew).
    NotYetValid,
}

impl JwtError {
    /// The hub's reason, for the challenge's `error_description`.
    pub(crate) fn rejection(&self) -> Rejection {
        match self {
            JwtError::Malformed(_) => Rejection::Malformed,
            JwtError::RefusedAlgorithm => Rejection::RefusedAlgorithm,
            JwtError::UnknownKey => Rejection::UnknownKey,
            JwtError::BadSignature => Rejection::BadSignature,
            JwtError::WrongIssuer => Rejection::WrongIssuer,
            JwtError::WrongAudience => Rejection::WrongAudience,
            JwtError::Expired => Rejection::Expired,
            JwtError::NotYetValid => Rejection::NotYetValid,
        }
    }
}

impl fmt::Display for JwtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JwtError::Malformed(Malformed::Segments) => {
                f.write_str("malformed JWT: not three dot-separated segments")
            }
            JwtError::Malformed(Malformed::Base64(part)) => {
                write!(f, "malformed JWT: the {part} is not base64url")
            }
            JwtError::Malformed(Malformed::Json { part, source }) => {
                write!(f, "malformed JWT: the {part} is not valid: {source}")
            }
            JwtError::Malformed(Malformed::Claim(name)) => {
                write!(f, "malformed JWT: claim {name:?} is missing or of the wrong type")
            }
            JwtError::Malformed(Malformed::Critical) => {
                f.write_str("malformed JWT: the header names critical extensions this hub does not implement")
            }
            other => f.write_str(other.rejection().reason()),
        }
    }
}

impl std::error::Error for JwtError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            JwtError::Malformed(Malformed::Json { source, .. }) => Some(source),
            _ => None,
        }
    }
}
