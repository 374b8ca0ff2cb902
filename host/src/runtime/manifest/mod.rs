//! The capability manifest `NAME.toml` beside `NAME.wasm`: parsing, validation
//! (every problem names its line and key), and the effective limits after clamping
//! to the operator's global caps.
//!
//! No manifest means pure compute: no network, no directories, no environment.
//!
//! - `grants`: outbound hosts and preopened directories;
//! - `needs`: the secrets (`[secrets.NAME]`) and configuration (`[config.NAME]`)
//!   the operator supplies;
//! - `limits`: requested and effective limits;
//! - `error`: what is wrong with a manifest, one problem per value.

mod error;
mod grants;
mod limits;
mod needs;

use error::Line;
pub use error::{ManifestError, ManifestProblem};
pub use grants::{DirGrant, GrantError, HostGrant};
pub use limits::{EffectiveLimits, LimitRequests};
pub use needs::{ConfigDecl, ConfigType, InjectRule, SecretDecl, SecretUse, is_config_name};

use super::file::ReadError;
use crate::toml::Document;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Largest manifest read, in bytes (a manifest is a few lines).
const MAX_MANIFEST_BYTES: u64 = 1 << 20;

/// A validated manifest. `Manifest::default()` is the deny-all manifest used when
/// there is no `NAME.toml`.
#[derive(Clone, Debug, Default)]
pub struct Manifest {
    /// Where it was read from; `None` when the plugin has no manifest.
    pub path: Option<PathBuf>,
    /// Callable but hidden from search.
    pub deprecated: bool,
    /// Outbound HTTP destinations.
    pub network: Vec<HostGrant>,
    /// Whether the plugin's outbound requests carry the call's W3C trace context
    /// (`network.trace_context`; off by default: trace ids leave the hub only
    /// where the manifest says so).
    pub trace_context: bool,
    /// Preopened directories.
    pub dirs: Vec<DirGrant>,
    /// Environment variables copied by name.
    pub env_vars: Vec<String>,
    /// Environment variables copied by name whose values are never shown
    /// (`[env] secrets`: the hub's own environment, shared by every plugin asking).
    pub env_secrets: Vec<String>,
    /// Secrets the operator supplies per plugin (`[secrets.NAME]`), by name.
    pub secrets: Vec<SecretDecl>,
    /// Configuration keys the operator may set per plugin (`[config.NAME]`), by name.
    pub config: Vec<ConfigDecl>,
    /// Limits the manifest asks for (before clamping).
    pub limits: LimitRequests,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    deprecated: Option<bool>,
    network: Option<RawNetwork>,
    #[serde(default)]
    dirs: Vec<RawDir>,
    env: Option<RawEnv>,
    limits: Option<RawLimits>,
    #[serde(default)]
    secrets: BTreeMap<String, needs::RawSecret>,
    #[serde(default)]
    config: BTreeMap<String, needs::RawConfig>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNetwork {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    trace_context: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDir {
    host: String,
    guest: String,
    writable: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEnv {
    #[serde(default)]
    vars: Vec<String>,
    #[serde(default)]
    secrets: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    memory_mb: Option<u64>,
    timeout_ms: Option<u64>,
    output_kb: Option<u64>,
    log_kb: Option<u64>,
}

/// `[A-Za-z_][A-Za-z0-9_]*`: an environment variable's or a secret's name.
pub fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The value checks of one manifest, collecting every problem.
struct Checks<'d, 't> {
    doc: &'d Document<'t>,
    problems: Vec<ManifestProblem>,
}

impl Checks<'_, '_> {
    /// The line of the value at `pointer` (`/dirs/0/host`).
    fn line(&self, pointer: &str) -> Line {
        Line(self.doc.line_at(pointer))
    }

    fn network(&mut self, allow: Vec<String>) -> Vec<HostGrant> {
        let mut grants = Vec::new();
        for (index, entry) in allow.iter().enumerate() {
            match HostGrant::parse(entry) {
                Ok(g) => grants.push(g),
                Err(source) => self.problems.push(ManifestProblem::Grant {
                    line: self.line(&format!("/network/allow/{index}")),
                    index,
                    source,
                }),
            }
        }
        grants
    }

    /// Relative host paths are resolved against `base`, the manifest's folder.
    fn dirs(&mut self, raw: &[RawDir], base: &Path) -> Vec<DirGrant> {
        let mut dirs = Vec::new();
        for (index, d) in raw.iter().enumerate() {
            let host = PathBuf::from(&d.host);
            let host = if host.is_absolute() { host } else { base.join(host) };
            let line = self.line(&format!("/dirs/{index}/host"));
            match std::fs::metadata(&host) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => self.problems.push(ManifestProblem::NotADirectory {
                    line,
                    index,
                    host: host.clone(),
                }),
                Err(source) => self.problems.push(ManifestProblem::DirUnreadable {
                    line,
                    index,
                    host: host.clone(),
                    source,
                }),
            }
            let guest = &d.guest;
            if !guest.starts_with('/') || guest.split('/').any(|c| c == "..") {
                self.problems.push(ManifestProblem::GuestPath {
                    line: self.line(&format!("/dirs/{index}/guest")),
                    index,
                    guest: guest.clone(),
                });
            }
            dirs.push(DirGrant {
                host,
                guest: guest.clone(),
                writable: d.writable.unwrap_or(false),
            });
        }
        dirs
    }

    /// The valid names of `env.{key}`.
    fn env_names(&mut self, key: &'static str, names: Vec<String>) -> Vec<String> {
        let mut valid = Vec::new();
        for (index, name) in names.into_iter().enumerate() {
            if is_env_name(&name) {
                valid.push(name);
            } else {
                self.problems.push(ManifestProblem::EnvName {
                    line: self.line(&format!("/env/{key}/{index}")),
                    key,
                    index,
                    name,
                });
            }
        }
        valid
    }

    fn limits(&mut self, raw: RawLimits) -> LimitRequests {
        let mut take = |key: &'static str, v: Option<u64>| match v {
            Some(0) => {
                let line = self.line(&format!("/limits/{key}"));
                self.problems.push(ManifestProblem::ZeroLimit { line, key });
                None
            }
            v => v,
        };
        LimitRequests {
            memory_mb: take("memory_mb", raw.memory_mb),
            timeout_ms: take("timeout_ms", raw.timeout_ms),
            output_kb: take("output_kb", raw.output_kb),
            log_kb: take("log_kb", raw.log_kb),
        }
    }
}

impl Manifest {
    /// Reads `path` if it exists; `Ok(Manifest::default())` when it does not.
    pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
        let bytes = match super::file::read_capped(path, MAX_MANIFEST_BYTES) {
            Ok(bytes) => bytes,
            Err(ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Manifest::default());
            }
            Err(ReadError::Io(e)) => return Err(ManifestError::one(path, ManifestProblem::Read(e))),
            Err(e) => return Err(ManifestError::one(path, ManifestProblem::Unreadable(e))),
        };
        match String::from_utf8(bytes) {
            Ok(text) => Manifest::parse(&text, path),
            Err(e) => Err(ManifestError::one(
                path,
                ManifestProblem::Read(std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
            )),
        }
    }

    /// Parses and validates manifest text; `path` names the file in problems and
    /// anchors relative directory paths.
    pub fn parse(text: &str, path: &Path) -> Result<Manifest, ManifestError> {
        let fail = |problems| ManifestError {
            path: path.to_owned(),
            problems,
        };
        let doc = Document::parse(text).map_err(|e| fail(vec![ManifestProblem::Toml(e)]))?;
        let raw: RawManifest = doc
            .deserialize()
            .map_err(|e| fail(vec![ManifestProblem::Toml(e)]))?;
        // Checks below name the line of the value they reject.
        let mut check = Checks {
            doc: &doc,
            problems: Vec::new(),
        };
        let trace_context = raw.network.as_ref().is_some_and(|n| n.trace_context);
        let network = check.network(raw.network.map(|n| n.allow).unwrap_or_default());
        let dirs = check.dirs(&raw.dirs, path.parent().unwrap_or(Path::new(".")));
        let (env_vars, env_secrets) = match raw.env {
            Some(env) => (
                check.env_names("vars", env.vars),
                check.env_names("secrets", env.secrets),
            ),
            None => (Vec::new(), Vec::new()),
        };
        let limits = raw.limits.map(|l| check.limits(l)).unwrap_or_default();
        let secrets = check.secrets(raw.secrets, &network);
        let config = check.config(raw.config);
        if !check.problems.is_empty() {
            return Err(fail(check.problems));
        }
        Ok(Manifest {
            path: Some(path.to_owned()),
            deprecated: raw.deprecated.unwrap_or(false),
            network,
            trace_context,
            dirs,
            env_vars,
            env_secrets,
            secrets,
            config,
            limits,
        })
    }

    /// One line per grant, for `plugin inspect` and the plugins API. Secret values
    /// are never included, only their names.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if self.path.is_none() {
            lines.push("no manifest: pure compute (no network, no files, no environment)".to_string());
            return lines;
        }
        if self.deprecated {
            lines.push("deprecated: callable, hidden from search".into());
        }
        for g in &self.network {
            lines.push(format!("network: {g}"));
        }
        if self.trace_context {
            lines.push("network: outbound requests carry the call's trace context (traceparent)".into());
        }
        for d in &self.dirs {
            let mode = if d.writable { "read-write" } else { "read-only" };
            lines.push(format!("dir: {} -> {} ({mode})", d.host.display(), d.guest));
        }
        for v in &self.env_vars {
            lines.push(format!("env: {v}"));
        }
        for v in &self.env_secrets {
            lines.push(format!("secret: {v} (from the hub's environment)"));
        }
        for s in &self.secrets {
            match &s.use_ {
                SecretUse::Inject(rules) => {
                    for rule in rules {
                        lines.push(format!("secret: {} injected into {rule}", s.name));
                    }
                }
                SecretUse::Reveal => lines.push(format!("secret: {} revealed to the plugin", s.name)),
            }
        }
        for c in &self.config {
            let need = match (&c.default, c.required) {
                (Some(d), _) => format!("default {d}"),
                (None, true) => "required".into(),
                (None, false) => "optional".into(),
            };
            lines.push(format!("config: {} ({}, {need})", c.name, c.ty.as_str()));
        }
        if lines.is_empty() {
            lines.push("no grants".into());
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Manifest, ManifestError> {
        Manifest::parse(text, Path::new("/tmp/p.toml"))
    }

    #[test]
    fn full_manifest_parses() {
        let dir = std::env::temp_dir();
        let text = format!(
            "deprecated = true\n[network]\nallow = [\"en.wikipedia.org\", \"127.0.0.1:8080\", \"[::1]:9\"]\n\
             trace_context = true\n[[dirs]]\nhost = \"{}\"\nguest = \"/data\"\n[env]\nvars = [\"LANG\"]\nsecrets = [\"API_KEY\"]\n\
             [limits]\nmemory_mb = 32\ntimeout_ms = 5000\noutput_kb = 256\nlog_kb = 16\n",
            dir.display()
        );
        let m = parse(&text).unwrap();
        assert!(m.deprecated && m.trace_context);
        assert!(m.describe().iter().any(|l| l.contains("trace context")));
        assert!(!parse("[network]\nallow = []\n").unwrap().trace_context);
        assert_eq!(
            m.network[0],
            HostGrant {
                host: "en.wikipedia.org".into(),
                port: None,
                ip: None
            }
        );
        assert_eq!(m.network[1].port, Some(8080));
        assert!(m.network[1].ip.is_some());
        assert_eq!(m.network[2].to_string(), "[::1]:9");
        assert!(!m.dirs[0].writable);
        assert_eq!(m.env_vars, ["LANG"]);
        assert_eq!(m.env_secrets, ["API_KEY"]);
        assert_eq!(m.limits.memory_mb, Some(32));
    }

    #[test]
    fn unknown_keys_name_key_and_line() {
        let err = parse("[limits]\nmemroy_mb = 3\n").unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
        assert!(err.contains("memroy_mb"), "{err}");
    }

    #[test]
    fn invalid_values_name_key_and_line_each() {
        let err = parse(
            "[network]\nallow = [\"https://x.org/\"]\n[[dirs]]\nhost = \"/definitely/not/here\"\nguest = \"data\"\n\
             [env]\nvars = [\"A-B\"]\n[limits]\ntimeout_ms = 0\n",
        )
        .unwrap_err();
        let p: Vec<String> = err.problems.iter().map(ToString::to_string).collect();
        assert_eq!(p.len(), 5, "{p:?}");
        assert!(p[0].starts_with("line 2: network.allow[0]"), "{p:?}");
        assert!(p[1].starts_with("line 4: dirs[0].host"), "{p:?}");
        assert!(p[2].starts_with("line 5: dirs[0].guest"), "{p:?}");
        assert!(p[3].starts_with("line 7: env.vars[0]"), "{p:?}");
        assert!(p[4].starts_with("line 9: limits.timeout_ms"), "{p:?}");
    }

    #[test]
    fn wrong_types_are_errors() {
        let err = parse("deprecated = \"yes\"\n").unwrap_err().to_string();
        assert!(err.contains("line 1"), "{err}");
    }
}
