//! The registered claims the hub checks (RFC 7519 §4.1): `iss` is the configured
//! issuer, `aud` names the resource, and the clock is between `nbf` and `exp`
//! give or take a small skew (issuers' and the hub's clocks drift). The other
//! claims are kept for mapping a subject to a principal.

use super::{JwtError, Malformed};
use serde_json::{Map, Value};

/// A token's claims.
#[derive(Debug, Clone)]
pub(crate) struct Claims {
    all: Map<String, Value>,
}

/// What a token must say to be accepted.
#[derive(Debug, Clone)]
pub(crate) struct Expect<'a> {
    /// The issuer, exactly as configured (and as the issuer writes `iss`).
    pub(crate) issuer: &'a str,
    /// The audience the request's resource answers to.
    pub(crate) audience: &'a str,
    /// How far `exp` and `nbf` may be off, in milliseconds.
    pub(crate) skew_ms: u64,
}

impl Claims {
    /// The claims of a decoded payload: a JSON object with a numeric `exp`
    /// (access tokens without an expiry are refused, RFC 9068 §2.2).
    pub(crate) fn parse(payload: &[u8]) -> Result<Claims, JwtError> {
        let all: Map<String, Value> = serde_json::from_slice(payload).map_err(|source| {
            JwtError::Malformed(Malformed::Json {
                part: "claims",
                source,
            })
        })?;
        let claims = Claims { all };
        claims
            .seconds("exp")?
            .ok_or(JwtError::Malformed(Malformed::Claim("exp")))?;
        claims.seconds("nbf")?;
        Ok(claims)
    }

    /// A string claim, `None` when absent or not a string.
    pub(crate) fn string(&self, name: &str) -> Option<&str> {
        self.all.get(name).and_then(Value::as_str)
    }

    /// A claim's strings: the string itself, or an array's strings (group claims,
    /// `aud`).
    pub(crate) fn strings(&self, name: &str) -> Vec<&str> {
        match self.all.get(name) {
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        }
    }

    /// The scope names the token carries: RFC 9068's space-separated `scope`, or
    /// `scp` (a string or an array of them, as some providers write it); `None`
    /// when it has neither claim.
    pub(crate) fn scopes(&self) -> Option<Vec<&str>> {
        let names = match self.all.get("scope") {
            Some(_) => self.strings("scope"),
            None if self.all.contains_key("scp") => self.strings("scp"),
            None => return None,
        };
        Some(names.into_iter().flat_map(str::split_whitespace).collect())
    }

    /// A NumericDate claim in Unix milliseconds (fractions allowed, as RFC 7519
    /// says); an error when present and not a non-negative number.
    fn seconds(&self, name: &'static str) -> Result<Option<u64>, JwtError> {
        match self.all.get(name) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(|s| Some((s * 1000.0) as u64))
                .ok_or(JwtError::Malformed(Malformed::Claim(name))),
        }
    }

    /// Checks `iss`, `aud`, `exp` and `nbf` against `expect` at `now_ms`.
    pub(crate) fn check(&self, expect: &Expect<'_>, now_ms: u64) -> Result<(), JwtError> {
        if self.string("iss") != Some(expect.issuer) {
            return Err(JwtError::WrongIssuer);
        }
        if !self.strings("aud").contains(&expect.audience) {
            return Err(JwtError::WrongAudience);
        }
        // `parse` made sure `exp` is there and both are numbers.
        let exp = self.seconds("exp")?.unwrap_or(0);
        if now_ms >= exp.saturating_add(expect.skew_ms) {
            return Err(JwtError::Expired);
        }
        if let Some(nbf) = self.seconds("nbf")?
            && now_ms.saturating_add(expect.skew_ms) < nbf
        {
            return Err(JwtError::NotYetValid);
        }
        Ok(())
    }
}
