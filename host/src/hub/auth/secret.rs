//! Token secrets: read once at start-up from the variable or file a token names
//! (a missing or empty one is a start-up error naming the token), kept only as
//! SHA-256 digests, and compared in constant time.

use crate::config::TokenConfig;

/// Why the configured tokens cannot be used (a start-up error).
#[derive(Debug)]
pub enum TokenError {
    EnvMissing {
        token: String,
        var: String,
        source: std::env::VarError,
    },
    FileUnreadable {
        token: String,
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    Empty {
        token: String,
    },
    Duplicate {
        first: String,
        second: String,
    },
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenError::EnvMissing { token, var, .. } => {
                write!(f, "tokens.{token}: environment variable {var} is not set")
            }
            TokenError::FileUnreadable { token, path, source } => {
                write!(
                    f,
                    "tokens.{token}: cannot read secret file {}: {source}",
                    path.display()
                )
            }
            TokenError::Empty { token } => write!(f, "tokens.{token}: the secret is empty"),
            TokenError::Duplicate { first, second } => {
                write!(f, "tokens.{first} and tokens.{second} have the same secret")
            }
        }
    }
}

impl std::error::Error for TokenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TokenError::EnvMissing { source, .. } => Some(source),
            TokenError::FileUnreadable { source, .. } => Some(source),
            TokenError::Empty { .. } | TokenError::Duplicate { .. } => None,
        }
    }
}

pub(super) fn read_secret(t: &TokenConfig) -> Result<String, TokenError> {
    let secret = match (&t.secret_env, &t.secret_file) {
        (Some(var), _) => std::env::var(var).map_err(|source| TokenError::EnvMissing {
            token: t.name.clone(),
            var: var.clone(),
            source,
        })?,
        (None, Some(path)) => std::fs::read_to_string(path).map_err(|e| TokenError::FileUnreadable {
            token: t.name.clone(),
            path: path.clone(),
            source: e,
        })?,
        // Config::check guarantees exactly one source; treat the impossible case as empty.
        (None, None) => String::new(),
    };
    let secret = secret.trim_end_matches(['\n', '\r']).to_string();
    if secret.trim().is_empty() {
        return Err(TokenError::Empty {
            token: t.name.clone(),
        });
    }
    Ok(secret)
}

pub(super) fn sha256(bytes: &[u8]) -> [u8; 32] {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    d.as_ref().try_into().expect("SHA-256 is 32 bytes")
}

/// Equal-length comparison whose time does not depend on where the bytes differ.
pub(super) fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let mut diff = 0u8;
    for i in 0..32 {
        diff |= a[i] ^ b[i];
    }
    // black_box keeps the optimizer from turning the fold into an early exit.
    std::hint::black_box(diff) == 0
}
