//! Why a configuration could not be used: the file, its TOML, or values that do
//! not fit together. Each variant keeps its cause for `source()`; the Display
//! text is what the operator reads, so it names the file, key and line.

use std::path::PathBuf;

/// Why a configuration could not be used.
#[derive(Debug)]
pub enum ConfigError {
    /// The file could not be read.
    Read {
        /// The configuration file.
        path: PathBuf,
        /// The filesystem error.
        source: std::io::Error,
    },
    /// The file is not valid TOML or has an unknown key or a wrong value; the
    /// TOML error names the key and the line.
    Parse {
        /// The configuration file (`(defaults)` when none was read).
        path: PathBuf,
        /// The TOML error, with its line and column.
        source: crate::toml::TomlError,
    },
    /// The values are individually fine but do not fit together, or a `--set`
    /// override is malformed.
    Invalid {
        /// The configuration file; `None` for a malformed `--set` override or
        /// when no file was read (defaults plus overrides).
        path: Option<PathBuf>,
        /// What does not fit, for the operator.
        message: String,
    },
    /// The file plus the `--set` overrides do not form a configuration.
    Overrides {
        /// The decoding error for the merged configuration.
        source: serde_json::Error,
    },
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Read { path, source } => write!(f, "{}: cannot read: {source}", path.display()),
            ConfigError::Parse { path, source } => write!(f, "{}: {source}", path.display()),
            ConfigError::Invalid {
                path: Some(path),
                message,
            } => write!(f, "{}: {message}", path.display()),
            ConfigError::Invalid { path: None, message } => write!(f, "configuration: {message}"),
            ConfigError::Overrides { source } => {
                write!(f, "configuration: with the --set overrides: {source}")
            }
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::Read { source, .. } => Some(source),
            ConfigError::Parse { source, .. } => Some(source),
            ConfigError::Overrides { source } => Some(source),
            ConfigError::Invalid { .. } => None,
        }
    }
}
