//! What is wrong with a manifest: [`ManifestError`] lists every problem found,
//! each a [`ManifestProblem`] that names the line and key of the value it rejects
//! and keeps the underlying error as its `source()`.

use super::super::file::ReadError;
use super::grants::GrantError;
use crate::toml::TomlError;
use std::fmt;
use std::path::PathBuf;

/// Why a manifest was refused: one entry per problem, each naming line and key.
#[derive(Debug)]
pub struct ManifestError {
    /// The `NAME.toml` file.
    pub path: PathBuf,
    /// Every problem found, in file order.
    pub problems: Vec<ManifestProblem>,
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{}: {p}", self.path.display())?;
        }
        Ok(())
    }
}

impl ManifestError {
    /// A refusal with a single problem.
    pub(super) fn one(path: &std::path::Path, problem: ManifestProblem) -> ManifestError {
        ManifestError {
            path: path.to_owned(),
            problems: vec![problem],
        }
    }
}

impl std::error::Error for ManifestError {
    /// The first problem: the others are in `problems`.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.problems.first().map(|p| p as _)
    }
}

/// Where a rejected value is: `line N`, or `manifest` when the line is unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Line(pub Option<usize>);

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(line) => write!(f, "line {line}"),
            None => f.write_str("manifest"),
        }
    }
}

/// One problem of a manifest.
#[derive(Debug)]
pub enum ManifestProblem {
    /// The file exists but cannot be read.
    Read(std::io::Error),
    /// Not a regular file (a FIFO, a device...) or too large: never read whole.
    Unreadable(ReadError),
    /// Not TOML, an unknown key, or a value of the wrong type (names its line).
    Toml(TomlError),
    /// `network.allow[index]` is not a host grant.
    Grant {
        /// Where the value is in the manifest.
        line: Line,
        /// Position in `network.allow` (0-based).
        index: usize,
        /// Why the entry is not a valid grant.
        source: GrantError,
    },
    /// `dirs[index].host` exists but is not a directory.
    NotADirectory {
        /// Where the value is in the manifest.
        line: Line,
        /// Position in `dirs` (0-based).
        index: usize,
        /// The host path given.
        host: PathBuf,
    },
    /// `dirs[index].host` cannot be looked at (missing, no permission).
    DirUnreadable {
        /// Where the value is in the manifest.
        line: Line,
        /// Position in `dirs` (0-based).
        index: usize,
        /// The host path given.
        host: PathBuf,
        /// Why it could not be looked at.
        source: std::io::Error,
    },
    /// `dirs[index].guest` is relative or contains `..`.
    GuestPath {
        /// Where the value is in the manifest.
        line: Line,
        /// Position in `dirs` (0-based).
        index: usize,
        /// The guest path given.
        guest: String,
    },
    /// `env.{key}[index]` is not an environment variable name.
    EnvName {
        /// Where the value is in the manifest.
        line: Line,
        /// Which list: `"vars"` or `"secrets"`.
        key: &'static str,
        /// Position in that list (0-based).
        index: usize,
        /// The rejected name.
        name: String,
    },
    /// A `[secrets.NAME]` or `[config.NAME]` entry is not valid.
    Need {
        /// Where the value is in the manifest.
        line: Line,
        /// The dotted key (`secrets.API_KEY.inject.host`).
        key: String,
        /// What is wrong with it.
        message: String,
    },
    /// `limits.{key} = 0`.
    ZeroLimit {
        /// Where the value is in the manifest.
        line: Line,
        /// The limit's key: `"memory_mb"`, `"timeout_ms"`, `"output_kb"` or `"log_kb"`.
        key: &'static str,
    },
}

impl fmt::Display for ManifestProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ManifestProblem::Read(e) => write!(f, "cannot read: {e}"),
            ManifestProblem::Unreadable(e) => {
                write!(f, "cannot read: {e}; a manifest must be a regular file")
            }
            ManifestProblem::Toml(e) => write!(f, "{e}"),
            ManifestProblem::Grant { line, index, source } => {
                write!(f, "{line}: network.allow[{index}]: {source}")
            }
            ManifestProblem::NotADirectory { line, index, host } => write!(
                f,
                "{line}: dirs[{index}].host {} is not a directory",
                host.display()
            ),
            ManifestProblem::DirUnreadable {
                line,
                index,
                host,
                source,
            } => write!(f, "{line}: dirs[{index}].host {}: {source}", host.display()),
            ManifestProblem::GuestPath { line, index, guest } => write!(
                f,
                "{line}: dirs[{index}].guest {guest:?} must be an absolute path without '..' (like \"/data\")"
            ),
            ManifestProblem::EnvName {
                line,
                key,
                index,
                name,
            } => write!(
                f,
                "{line}: env.{key}[{index}] {name:?} is not an environment variable name \
                 ([A-Za-z_][A-Za-z0-9_]*)"
            ),
            ManifestProblem::Need { line, key, message } => write!(f, "{line}: {key}: {message}"),
            ManifestProblem::ZeroLimit { line, key } => {
                write!(f, "{line}: limits.{key} must be greater than 0")
            }
        }
    }
}

impl std::error::Error for ManifestProblem {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ManifestProblem::Read(e) | ManifestProblem::DirUnreadable { source: e, .. } => Some(e),
            ManifestProblem::Toml(e) => Some(e),
            ManifestProblem::Unreadable(e) => Some(e),
            ManifestProblem::Grant { source, .. } => Some(source),
            ManifestProblem::NotADirectory { .. }
            | ManifestProblem::GuestPath { .. }
            | ManifestProblem::EnvName { .. }
            | ManifestProblem::Need { .. }
            | ManifestProblem::ZeroLimit { .. } => None,
        }
    }
}
