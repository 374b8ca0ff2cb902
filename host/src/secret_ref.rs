//! Secret references in configuration, and resolved secret values. A reference is
//! `env:VAR` (the hub's environment variable), `file:/path` (a file's text, one
//! trailing newline dropped: a Kubernetes secret volume) or, where a literal is
//! allowed (an MCP server's env and headers), the value as written. References
//! are parsed when the configuration is checked (a malformed one is a
//! configuration error) and read only where the value is used, at that moment:
//! an MCP server's env and headers when it starts, a plugin's
//! `[plugin.NAME.secrets]` at every call that needs one (so a rotated file or
//! variable is used by the next). No error and no `Debug` output ever holds a
//! value: [`Secret`] prints its length only.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where a configured value comes from.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum SecretRef {
    /// The value as written (only where literals are allowed).
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

/// The reference as configured (`env:VAR`, `file:/path`); never a literal's value.
impl fmt::Display for SecretRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretRef::Literal(_) => f.write_str("a literal value"),
            SecretRef::Env(var) => write!(f, "env:{var}"),
            SecretRef::File(path) => write!(f, "file:{}", path.display()),
        }
    }
}

/// A secret's value. Never printed: `Debug` shows its length only.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(String);

impl Secret {
    /// A value read elsewhere (a sealed value opened, a value piped in).
    pub(crate) fn new(value: String) -> Secret {
        Secret(value)
    }

    /// The value, for the one place that hands it on (a child's environment, a
    /// request header, a guest that may reveal it).
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({} bytes)", self.0.len())
    }
}

/// Why a reference cannot be used. The texts name the variable or the file, never
/// a value.
#[derive(Debug)]
pub(crate) enum SecretError {
    /// `env:` without a variable name (`[A-Za-z_][A-Za-z0-9_]*`), `file:` with a
    /// relative or empty path, or a literal where only references are allowed.
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
    /// The file is larger than the caller's bound.
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// The bound, in bytes.
        max_bytes: u64,
    },
    /// The file is not UTF-8 text.
    NotText {
        /// The file.
        path: PathBuf,
    },
}

impl fmt::Display for SecretError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretError::Malformed(why) => f.write_str(why),
            SecretError::EnvMissing { var, source } => match source {
                std::env::VarError::NotPresent => write!(f, "environment variable {var} is not set"),
                std::env::VarError::NotUnicode(_) => write!(f, "environment variable {var} is not UTF-8"),
            },
            SecretError::File { path, source } => {
                write!(f, "cannot read the secret file {}: {source}", path.display())
            }
            SecretError::FileTooLarge { path, max_bytes } => write!(
                f,
                "the secret file {} is larger than {} KiB",
                path.display(),
                max_bytes / 1024
            ),
            SecretError::NotText { path } => {
                write!(f, "the secret file {} is not UTF-8 text", path.display())
            }
        }
    }
}

impl std::error::Error for SecretError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SecretError::EnvMissing { source, .. } => Some(source),
            SecretError::File { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl SecretRef {
    /// Reads a configured value: `env:VAR`, `file:/absolute/path` or a literal.
    pub(crate) fn parse(value: &str) -> Result<SecretRef, SecretError> {
        if let Some(var) = value.strip_prefix("env:") {
            let mut bytes = var.bytes();
            let named = matches!(bytes.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
                && bytes.all(|c| c.is_ascii_alphanumeric() || c == b'_');
            if !named {
                return Err(SecretError::Malformed(
                    "env: needs a variable name of letters, digits and _ (env:NAME)",
                ));
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

    /// Reads a reference where a literal is not allowed (a plugin's secrets in the
    /// hub's TOML: a value itself is sealed with `wasmhub secret set` instead).
    pub(crate) fn parse_reference(value: &str) -> Result<SecretRef, SecretError> {
        match SecretRef::parse(value)? {
            SecretRef::Literal(_) => Err(SecretError::Malformed(
                "a secret here is a reference, env:VARIABLE or file:/absolute/path",
            )),
            reference => Ok(reference),
        }
    }

    /// The value now: the variable's, the file's text (at most `max_bytes`)
    /// without its trailing newline, or the literal.
    pub(crate) fn resolve(&self, max_bytes: u64) -> Result<Secret, SecretError> {
        match self {
            SecretRef::Literal(v) => Ok(Secret(v.clone())),
            SecretRef::Env(var) => std::env::var(var)
                .map(Secret)
                .map_err(|source| SecretError::EnvMissing {
                    var: var.clone(),
                    source,
                }),
            SecretRef::File(path) => read_file(path, max_bytes).map(|text| Secret(without_newline(text))),
        }
    }
}

/// `text` without one trailing newline (`\n` or `\r\n`): how a file or a piped
/// value usually ends, never part of a key.
pub(crate) fn without_newline(mut text: String) -> String {
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
    text
}

/// The file's text: regular files only (a FIFO or a device is refused by type,
/// never read), at most `max_bytes` (`runtime::read_capped`, the plugin loader's
/// reader).
fn read_file(path: &Path, max_bytes: u64) -> Result<String, SecretError> {
    let bytes = crate::runtime::read_capped(path, max_bytes).map_err(|e| match e {
        crate::runtime::ReadError::TooLarge { .. } => SecretError::FileTooLarge {
            path: path.to_owned(),
            max_bytes,
        },
        crate::runtime::ReadError::Io(source) => SecretError::File {
            path: path.to_owned(),
            source,
        },
        not_regular => SecretError::File {
            path: path.to_owned(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, not_regular),
        },
    })?;
    String::from_utf8(bytes).map_err(|_| SecretError::NotText {
        path: path.to_owned(),
    })
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
        assert_eq!(
            SecretRef::parse("env:API_KEY").unwrap(),
            SecretRef::Env("API_KEY".into())
        );
        for bad in ["env:", "env:A-B", "file:relative"] {
            assert!(SecretRef::parse(bad).is_err(), "{bad}");
        }
        assert!(SecretRef::parse_reference("plain value").is_err());
        assert_eq!(
            SecretRef::parse_reference("file:/run/secrets/k").unwrap(),
            SecretRef::File("/run/secrets/k".into())
        );
        let dir = crate::test_dir::TempDir::new("secret-ref");
        let path = dir.path().join("s");
        std::fs::write(&path, "hunter2\r\n").unwrap();
        let r = SecretRef::parse(&format!("file:{}", path.display())).unwrap();
        let secret = r.resolve(1024).unwrap();
        assert_eq!(secret.expose(), "hunter2");
        assert!(!format!("{secret:?}").contains("hunter2"));
        assert!(!format!("{:?}", SecretRef::parse("hunter2").unwrap()).contains("hunter2"));
        assert!(
            !SecretRef::parse("hunter2")
                .unwrap()
                .to_string()
                .contains("hunter2")
        );
        assert!(matches!(
            r.resolve(4),
            Err(SecretError::FileTooLarge { max_bytes: 4, .. })
        ));
        let missing = SecretRef::Env("WASMHUB_SURELY_UNSET_VAR".into())
            .resolve(1024)
            .unwrap_err();
        assert_eq!(
            missing.to_string(),
            "environment variable WASMHUB_SURELY_UNSET_VAR is not set"
        );
        let gone = SecretRef::File(dir.path().join("none"))
            .resolve(1024)
            .unwrap_err();
        assert!(
            gone.to_string().starts_with("cannot read the secret file"),
            "{gone}"
        );
    }
}
