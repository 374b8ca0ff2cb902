//! Plugins from OCI registries: `plugin pull` / `plugin push` / `plugin sync` and
//! the `[[plugins.sources]]` that `serve` pulls at start, so every replica runs the
//! same digests. Components travel in the Wasm OCI artifact layout (`manifest`);
//! their signatures (`runtime::trust`) as artifacts tagged `sha256-<hex>.sig` next
//! to them. What was pulled is written atomically into the plugins folder and
//! pinned, with its source, in `plugins.lock`.
//!
//! - `reference`: `oci://host[:port]/repo:tag|@sha256:…`;
//! - `auth`: credentials (environment, Docker config) and `WWW-Authenticate`;
//! - `manifest`: the manifests read and written;
//! - `registry`: the distribution API over `http_client`;
//! - `pull`, `push`: the operations.

mod auth;
mod manifest;
mod pull;
mod push;
mod reference;
mod registry;

pub use auth::{ConfigFileError, ConfigFileProblem, Credentials, PASSWORD_ENV, USERNAME_ENV};
pub use manifest::{PLUGIN_TOML_LAYER, SIGNATURE_LAYER, WASM_CONFIG, WASM_LAYER, signature_tag};
pub use pull::{Pull, Pulled, sync};
pub use push::{Pushed, push};
pub use reference::{Reference, ReferenceError};

use crate::config::PluginsConfig;
use crate::runtime::{LockError, TrustProblem};
use std::fmt;
use std::path::PathBuf;

/// How the hub talks to registries (from `[plugins]` and the command line).
#[derive(Clone, Debug)]
pub struct Options {
    /// Plain HTTP to registries that are not on loopback (`--insecure-http`).
    pub insecure_http: bool,
    /// Largest response read, in MiB (`plugins.max_pull_mb`).
    pub max_pull_mb: u64,
    /// Longest one registry request may take, in seconds (`plugins.pull_timeout_secs`).
    pub timeout_secs: u64,
}

impl Options {
    /// The options of `[plugins]`.
    pub fn from_config(config: &PluginsConfig) -> Options {
        Options {
            insecure_http: config.insecure_http,
            max_pull_mb: config.max_pull_mb,
            timeout_secs: config.pull_timeout_secs,
        }
    }
}

/// Why a pull, push or sync failed.
#[derive(Debug)]
pub enum DistError {
    /// The reference does not parse.
    Reference(ReferenceError),
    /// The plugin name (given or the repository's last segment) is not valid.
    BadName(String),
    /// The Docker config file cannot be used.
    Credentials(ConfigFileError),
    /// No connection to the registry (DNS, TCP, TLS).
    Connect {
        /// `host[:port]`.
        registry: String,
        /// What failed.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The HTTP exchange broke.
    Http {
        /// The request.
        what: String,
        /// hyper's error.
        source: hyper::Error,
    },
    /// A request took longer than `plugins.pull_timeout_secs`.
    Timeout {
        /// The request.
        what: String,
        /// The limit.
        secs: u64,
    },
    /// A response was larger than `plugins.max_pull_mb`.
    TooLarge {
        /// The request.
        what: String,
        /// The limit.
        limit_mb: u64,
    },
    /// The registry refused the request.
    Status {
        /// The request.
        what: String,
        /// The HTTP status.
        status: u16,
        /// The registry's error code and message, or the start of its body.
        message: String,
    },
    /// Authentication failed.
    Unauthorized {
        /// `host[:port]`.
        registry: String,
        /// Why.
        why: String,
    },
    /// The registry broke the protocol (a missing `Location`, a redirect elsewhere).
    Protocol(String),
    /// The reference does not exist in the registry.
    NotFound(String),
    /// The artifact is not a plugin (or not a signature).
    NotAPlugin(String),
    /// Content whose digest is not the one asked for.
    DigestMismatch {
        /// What was fetched (`blob sha256:…`).
        what: String,
        /// The digest of what came.
        actual: String,
    },
    /// `--locked`: the reference is not pinned, or the tag now points elsewhere.
    Locked(String),
    /// `[trust] require_signed` and the registry has no signature next to the artifact.
    Unsigned {
        /// The reference pulled.
        reference: String,
        /// The signature tag looked for.
        tag: String,
    },
    /// The signature check of `[trust]` failed.
    Trust(TrustProblem),
    /// A file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// The filesystem error.
        source: std::io::Error,
    },
    /// `plugins.lock` could not be read or written.
    Lock(LockError),
}

impl fmt::Display for DistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DistError::Reference(e) => write!(f, "{e}"),
            DistError::BadName(n) => write!(
                f,
                "plugin name {n:?} must match [a-z][a-z0-9_-]*: give one with --name (or name = in [[plugins.sources]])"
            ),
            DistError::Credentials(e) => write!(f, "{e}"),
            DistError::Connect { registry, source } => {
                write!(f, "cannot connect to the registry {registry}: {source}")
            }
            DistError::Http { what, source } => write!(f, "{what}: {source}"),
            DistError::Timeout { what, secs } => {
                write!(f, "{what}: no answer within {secs} s (plugins.pull_timeout_secs)")
            }
            DistError::TooLarge { what, limit_mb } => {
                write!(
                    f,
                    "{what}: the response is larger than {limit_mb} MiB (plugins.max_pull_mb)"
                )
            }
            DistError::Status {
                what,
                status,
                message,
            } => {
                write!(f, "{what}: the registry answered {status}: {message}")
            }
            DistError::Unauthorized { registry, why } => write!(
                f,
                "the registry {registry} refused access: {why} (credentials: {USERNAME_ENV}/{PASSWORD_ENV} or ~/.docker/config.json auths)"
            ),
            DistError::Protocol(why) => write!(f, "{why}"),
            DistError::NotFound(r) => write!(f, "{r}: not found in the registry"),
            DistError::NotAPlugin(why) => write!(f, "not a wasmhub plugin artifact: {why}"),
            DistError::DigestMismatch { what, actual } => {
                write!(f, "{what}: the registry sent content whose digest is {actual}")
            }
            DistError::Locked(why) => write!(f, "{why}"),
            DistError::Unsigned { reference, tag } => write!(
                f,
                "refused by [trust]: {reference} is unsigned (no signature tagged {tag}) and [trust] require_signed \
                 is on; the author signs it with `wasmhub plugin sign` before `wasmhub plugin push`"
            ),
            DistError::Trust(e) => write!(f, "refused by [trust]: {e}"),
            DistError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            DistError::Lock(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for DistError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DistError::Reference(e) => Some(e),
            DistError::Credentials(e) => Some(e),
            DistError::Connect { source, .. } => Some(source.as_ref()),
            DistError::Http { source, .. } => Some(source),
            DistError::Trust(e) => Some(e),
            DistError::Io { source, .. } => Some(source),
            DistError::Lock(e) => Some(e),
            _ => None,
        }
    }
}
