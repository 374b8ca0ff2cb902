//! PKCE (RFC 7636), `S256` only: OAuth 2.1 and the MCP authorization spec require
//! it, and `plain` would let whoever sees the authorization request redeem the code.

/// Why a PKCE parameter is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PkceError {
    /// `code_challenge` is missing.
    MissingChallenge,
    /// `code_challenge_method` is not `S256` (absent means `plain`).
    MethodNotS256,
    /// The challenge is not 43 base64url characters (a SHA-256 digest).
    MalformedChallenge,
    /// The verifier is not 43 to 128 unreserved characters (RFC 7636 §4.1).
    MalformedVerifier,
    /// The verifier does not hash to the challenge.
    Mismatch,
}

impl std::fmt::Display for PkceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PkceError::MissingChallenge => "code_challenge is required (PKCE)",
            PkceError::MethodNotS256 => "code_challenge_method must be S256",
            PkceError::MalformedChallenge => "code_challenge must be 43 base64url characters (S256)",
            PkceError::MalformedVerifier => "code_verifier must be 43 to 128 characters of [A-Za-z0-9-._~]",
            PkceError::Mismatch => "code_verifier does not match the code_challenge",
        })
    }
}

impl std::error::Error for PkceError {}

/// The challenge of an authorization request, checked: present, `S256`, well formed.
pub(crate) fn challenge(challenge: Option<&str>, method: Option<&str>) -> Result<String, PkceError> {
    let challenge = challenge
        .filter(|c| !c.is_empty())
        .ok_or(PkceError::MissingChallenge)?;
    if method != Some("S256") {
        return Err(PkceError::MethodNotS256);
    }
    let base64url = |c: u8| c.is_ascii_alphanumeric() || c == b'-' || c == b'_';
    if challenge.len() != 43 || !challenge.bytes().all(base64url) {
        return Err(PkceError::MalformedChallenge);
    }
    Ok(challenge.to_string())
}

/// Whether `verifier` proves `challenge`: BASE64URL(SHA256(verifier)) == challenge.
pub(crate) fn verify(verifier: &str, challenge: &str) -> Result<(), PkceError> {
    let unreserved = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~');
    if !(43..=128).contains(&verifier.len()) || !verifier.bytes().all(unreserved) {
        return Err(PkceError::MalformedVerifier);
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
    let computed = crate::base64::encode_url(digest.as_ref());
    // Both are public-length strings; the challenge is not secret, but compare in
    // full anyway so timing says nothing about the verifier.
    let same = computed.len() == challenge.len()
        && computed
            .bytes()
            .zip(challenge.bytes())
            .fold(0u8, |d, (a, b)| d | (a ^ b))
            == 0;
    if same { Ok(()) } else { Err(PkceError::Mismatch) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7636 Appendix B.
    const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    #[test]
    fn the_rfc_example_verifies() {
        assert_eq!(challenge(Some(CHALLENGE), Some("S256")).unwrap(), CHALLENGE);
        assert_eq!(verify(VERIFIER, CHALLENGE), Ok(()));
    }

    #[test]
    fn only_well_formed_s256_challenges_are_accepted() {
        assert_eq!(challenge(None, Some("S256")), Err(PkceError::MissingChallenge));
        assert_eq!(
            challenge(Some(""), Some("S256")),
            Err(PkceError::MissingChallenge)
        );
        assert_eq!(challenge(Some(CHALLENGE), None), Err(PkceError::MethodNotS256));
        assert_eq!(
            challenge(Some(CHALLENGE), Some("plain")),
            Err(PkceError::MethodNotS256)
        );
        assert_eq!(
            challenge(Some(CHALLENGE), Some("s256")),
            Err(PkceError::MethodNotS256)
        );
        assert_eq!(
            challenge(Some("short"), Some("S256")),
            Err(PkceError::MalformedChallenge)
        );
        let padded = format!("{}=", &CHALLENGE[..42]);
        assert_eq!(
            challenge(Some(&padded), Some("S256")),
            Err(PkceError::MalformedChallenge)
        );
    }

    #[test]
    fn wrong_or_malformed_verifiers_are_refused() {
        let other = "eBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert_eq!(verify(other, CHALLENGE), Err(PkceError::Mismatch));
        assert_eq!(verify("too-short", CHALLENGE), Err(PkceError::MalformedVerifier));
        assert_eq!(
            verify(&"a".repeat(129), CHALLENGE),
            Err(PkceError::MalformedVerifier)
        );
        let bad_char = format!("{}+", &VERIFIER[..43]);
        assert_eq!(verify(&bad_char, CHALLENGE), Err(PkceError::MalformedVerifier));
        // The challenge itself is not a verifier of itself.
        assert_eq!(verify(CHALLENGE, CHALLENGE), Err(PkceError::Mismatch));
    }
}
