//! Secret references in configuration values: `env:VAR` (the hub's environment
//! variable), `file:/path` (a file's text, trailing newline dropped), or a literal
//! value. Parsed when the configuration is checked (so a malformed reference is a
//! configuration error), resolved only where the value is used, at that moment (an
//! MCP server's env and headers, when it starts). Neither a parse error nor a
//! resolve error ever contains the value itself; the resolved text is a
//! [`Secret`], whose `Debug` does not print it.

use std::fmt;
use std::path::PathBuf;

/// Largest secret file read, in bytes.
const MAX_FILE_BYTES: u64 = 64 * 1024;

/// Where a configured value comes from.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum SecretRef {
    /// The value as written.
    Literal(String),
    /// `env:VAR`.
    Env(String),
    /// `file:/path`.
    File(PathBuf),
}

impl fmt::Debug for SecretRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretRef::Literal(_) => f.write_str("Literal(..)"),
            SecretRef::Env(var) => write!(f, "Env({var})"),
            SecretRef::File(path) => write!(f, "File({})", path.display()),
        }
    }
}

/// A resolved value, kept out of `Debug` output.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(String);

impl Secret {
    /// The value, for the one place that hands it on (a child's environment, a
    /// request header).
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// Why a reference cannot be used. The texts name the variable or the file, never
/// a value.
#[derive(Debug)]
pub(crate) enum SecretError {
    /// `env:` with no variable name, or `file:` with a relative or empty path.
    Malformed(&'static str),
    /// The variable is not set (or not Unicode).
    EnvMissing {
        /// The variable.
        var: String,
        /// Why `std::env::var` failed.
        source: std::env::VarError,
    },
    /// The file cannot be read.
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is larger than 64 KiB.
    FileTooLarge {
        /// The file.
        path: PathBuf,
    },
}

impl fmt::Display for SecretError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretError::Malformed(why) => f.write_str(why),
            SecretError::EnvMissing { var, .. } => write!(f, "environment variable {var} is not set"),
            SecretError::File { path, source } => {
                write!(f, "cannot read the secret file {}: {source}", path.display())
            }
            SecretError::FileTooLarge { path } => write!(
                f,
                "the secret file {} is larger than {} KiB",
                path.display(),
                MAX_FILE_BYTES / 1024
            ),
        }
    }
}

impl std::error::Error for SecretError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SecretError::EnvMissing { source, .. } => Some(source),
            SecretError::File { source, .. } => Some(source),
            SecretError::Malformed(_) | SecretError::FileTooLarge { .. } => None,
        }
    }
}

impl SecretRef {
    /// Reads a configured value: `env:VAR`, `file:/absolute/path` or a literal.
    pub(crate) fn parse(value: &str) -> Result<SecretRef, SecretError> {
        if let Some(var) = value.strip_prefix("env:") {
            if var.is_empty() || var.contains('=') || var.contains('\0') {
                return Err(SecretError::Malformed("env: needs a variable name (env:NAME)"));
            }
            return Ok(SecretRef::Env(var.to_string()));
        }
        if let Some(path) = value.strip_prefix("file:") {
            let path = PathBuf::from(path);
            if !path.is_absolute() {
                return Err(SecretError::Malformed(
                    "file: needs an absolute path (file:/path)",
                ));
            }
            return Ok(SecretRef::File(path));
        }
        Ok(SecretRef::Literal(value.to_string()))
    }

    /// The value now: the variable's, or the file's text without its trailing
    /// newline, or the literal.
    pub(crate) fn resolve(&self) -> Result<Secret, SecretError> {
        match self {
            SecretRef::Literal(v) => Ok(Secret(v.clone())),
            SecretRef::Env(var) => std::env::var(var)
                .map(Secret)
                .map_err(|source| SecretError::EnvMissing {
                    var: var.clone(),
                    source,
                }),
            SecretRef::File(path) => read_file(path).map(Secret),
        }
    }
}

fn read_file(path: &std::path::Path) -> Result<String, SecretError> {
    use std::io::Read;
    let error = |source| SecretError::File {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(error)?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(error)?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(SecretError::FileTooLarge {
            path: path.to_owned(),
        });
    }
    Ok(text.trim_end_matches(['\n', '\r']).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse_and_resolve_without_showing_values() {
        assert_eq!(
            SecretRef::parse("plain").unwrap(),
            SecretRef::Literal("plain".into())
        );
        assert!(SecretRef::parse("env:").is_err());
        assert!(SecretRef::parse("file:relative").is_err());
        let dir = crate::test_dir::TempDir::new("secret-ref");
        let path = dir.path().join("s");
        std::fs::write(&path, "hunter2\n").unwrap();
        let r = SecretRef::parse(&format!("file:{}", path.display())).unwrap();
        let secret = r.resolve().unwrap();
        assert_eq!(secret.expose(), "hunter2");
        assert!(!format!("{secret:?}").contains("hunter2"));
        assert!(!format!("{:?}", SecretRef::parse("hunter2").unwrap()).contains("hunter2"));
        let missing = SecretRef::Env("WASMHUB_SURELY_UNSET_VAR".into())
            .resolve()
            .unwrap_err();
        assert_eq!(
            missing.to_string(),
            "environment variable WASMHUB_SURELY_UNSET_VAR is not set"
        );
        let gone = SecretRef::File(dir.path().join("none")).resolve().unwrap_err();
        assert!(
            gone.to_string().starts_with("cannot read the secret file"),
            "{gone}"
        );
    }
}
