//! The capability manifest `NAME.toml` beside `NAME.wasm`: parsing, validation
//! (every problem names its line and key), and the effective limits after clamping
//! to the operator's global caps.
//!
//! No manifest means pure compute: no network, no directories, no environment.

use crate::config::Limits;
use crate::toml::Document;
use serde::Deserialize;
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

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
    /// Preopened directories.
    pub dirs: Vec<DirGrant>,
    /// Environment variables copied by name.
    pub env_vars: Vec<String>,
    /// Environment variables copied by name whose values are never shown.
    pub secrets: Vec<String>,
    /// Limits the manifest asks for (before clamping).
    pub limits: LimitRequests,
}

/// Limits a manifest asks for; `None` = the operator's global cap.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LimitRequests {
    pub memory_mb: Option<u64>,
    pub timeout_ms: Option<u64>,
    pub output_kb: Option<u64>,
    pub log_kb: Option<u64>,
}

/// The limits one plugin's calls run under: its manifest's requests clamped to the
/// operator's caps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EffectiveLimits {
    pub memory_mb: u64,
    pub timeout_ms: u64,
    pub output_kb: u64,
    pub log_kb: u64,
    pub input_kb: u64,
}

impl EffectiveLimits {
    /// Clamps `requests` to `caps`; the notes say which requests were lowered.
    pub fn resolve(requests: &LimitRequests, caps: &Limits) -> (EffectiveLimits, Vec<String>) {
        let mut notes = Vec::new();
        let mut clamp = |key: &str, asked: Option<u64>, cap: u64| match asked {
            Some(v) if v > cap => {
                notes.push(format!(
                    "limits.{key} = {v} is above the operator's cap; using {cap}"
                ));
                cap
            }
            Some(v) => v,
            None => cap,
        };
        let limits = EffectiveLimits {
            memory_mb: clamp("memory_mb", requests.memory_mb, caps.memory_mb),
            timeout_ms: clamp("timeout_ms", requests.timeout_ms, caps.timeout_ms),
            output_kb: clamp("output_kb", requests.output_kb, caps.output_kb),
            log_kb: clamp("log_kb", requests.log_kb, caps.log_kb),
            input_kb: caps.input_kb,
        };
        (limits, notes)
    }

    pub fn memory_bytes(&self) -> usize {
        usize::try_from(self.memory_mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX)
    }
    pub fn output_bytes(&self) -> usize {
        usize::try_from(self.output_kb.saturating_mul(1024)).unwrap_or(usize::MAX)
    }
    pub fn log_bytes(&self) -> usize {
        usize::try_from(self.log_kb.saturating_mul(1024)).unwrap_or(usize::MAX)
    }
    pub fn input_bytes(&self) -> usize {
        usize::try_from(self.input_kb.saturating_mul(1024)).unwrap_or(usize::MAX)
    }
}

/// One granted outbound destination: `host` or `host:port`.
///
/// Without a port only the scheme's default port (80 for http, 443 for https) is
/// granted. A grant whose host is an IP literal is the only way to reach a private,
/// loopback or link-local address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostGrant {
    /// Lowercase host name, or the IP literal as written (without brackets).
    pub host: String,
    pub port: Option<u16>,
    /// Set when `host` is an IP literal.
    pub ip: Option<IpAddr>,
}

impl fmt::Display for HostGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.ip, self.port) {
            (Some(IpAddr::V6(ip)), Some(port)) => write!(f, "[{ip}]:{port}"),
            (_, Some(port)) => write!(f, "{}:{port}", self.host),
            (_, None) => f.write_str(&self.host),
        }
    }
}

impl HostGrant {
    /// Parses `host`, `host:port`, `1.2.3.4:80`, `[::1]:8080`.
    pub fn parse(text: &str) -> Result<HostGrant, String> {
        if text.contains("://") || text.contains('/') {
            return Err(format!(
                "{text:?} must be a host or host:port, without scheme or path"
            ));
        }
        if let Ok(ip) = text.parse::<IpAddr>() {
            return Ok(HostGrant {
                host: ip.to_string(),
                port: None,
                ip: Some(ip),
            });
        }
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (ip, after) = rest
                .split_once(']')
                .ok_or_else(|| format!("{text:?}: missing ']'"))?;
            let port = match after {
                "" => None,
                p => Some(
                    p.strip_prefix(':')
                        .ok_or_else(|| format!("{text:?}: expected ':port' after ']'"))?,
                ),
            };
            (ip, port)
        } else {
            match text.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (text, None),
            }
        };
        let port = match port {
            None => None,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => Some(n),
                _ => return Err(format!("{text:?}: port {p:?} is not a number from 1 to 65535")),
            },
        };
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(HostGrant {
                host: ip.to_string(),
                port,
                ip: Some(ip),
            });
        }
        let host = host.to_ascii_lowercase();
        let valid_label = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if host.is_empty() || host.len() > 253 || !host.split('.').all(valid_label) {
            return Err(format!(
                "{text:?} is not a valid host name (letters, digits, '-' and '.'; no wildcards)"
            ));
        }
        Ok(HostGrant { host, port, ip: None })
    }
}

/// One preopened directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirGrant {
    /// Absolute host path (relative paths in the manifest are resolved against the
    /// manifest's folder).
    pub host: PathBuf,
    /// Absolute path the guest sees.
    pub guest: String,
    pub writable: bool,
}

/// Why a manifest was refused: one entry per problem, each naming line and key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestError {
    pub path: PathBuf,
    pub problems: Vec<String>,
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    deprecated: Option<bool>,
    network: Option<RawNetwork>,
    #[serde(default)]
    dirs: Vec<RawDir>,
    env: Option<RawEnv>,
    limits: Option<RawLimits>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNetwork {
    #[serde(default)]
    allow: Vec<String>,
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

fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

impl Manifest {
    /// Reads `path` if it exists; `Ok(Manifest::default())` when it does not.
    pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Manifest::parse(&text, path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Manifest::default()),
            Err(e) => Err(ManifestError {
                path: path.to_owned(),
                problems: vec![format!("cannot read: {e}")],
            }),
        }
    }

    /// Parses and validates manifest text; `path` names the file in problems and
    /// anchors relative directory paths.
    pub fn parse(text: &str, path: &Path) -> Result<Manifest, ManifestError> {
        let fail = |problems| ManifestError {
            path: path.to_owned(),
            problems,
        };
        let doc = Document::parse(text).map_err(|e| fail(vec![e.to_string()]))?;
        let raw: RawManifest = doc.deserialize().map_err(|e| fail(vec![e.to_string()]))?;
        let mut problems = Vec::new();
        // Checks below name the line of the value they reject.
        let at = |pointer: String| match doc.line_at(&pointer) {
            Some(line) => format!("line {line}"),
            None => "manifest".to_string(),
        };

        let mut network = Vec::new();
        for (i, entry) in raw
            .network
            .map(|n| n.allow)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            match HostGrant::parse(entry) {
                Ok(g) => network.push(g),
                Err(m) => problems.push(format!(
                    "{}: network.allow[{i}]: {m}",
                    at(format!("/network/allow/{i}"))
                )),
            }
        }

        let base = path.parent().unwrap_or(Path::new("."));
        let mut dirs = Vec::new();
        for (i, d) in raw.dirs.iter().enumerate() {
            let host = PathBuf::from(&d.host);
            let host = if host.is_absolute() { host } else { base.join(host) };
            match std::fs::metadata(&host) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => problems.push(format!(
                    "{}: dirs[{i}].host {} is not a directory",
                    at(format!("/dirs/{i}/host")),
                    host.display()
                )),
                Err(e) => problems.push(format!(
                    "{}: dirs[{i}].host {}: {e}",
                    at(format!("/dirs/{i}/host")),
                    host.display()
                )),
            }
            let guest = &d.guest;
            if !guest.starts_with('/') || guest.split('/').any(|c| c == "..") {
                problems.push(format!(
                    "{}: dirs[{i}].guest {guest:?} must be an absolute path without '..' (like \"/data\")",
                    at(format!("/dirs/{i}/guest"))
                ));
            }
            dirs.push(DirGrant {
                host,
                guest: guest.clone(),
                writable: d.writable.unwrap_or(false),
            });
        }

        let (mut env_vars, mut secrets) = (Vec::new(), Vec::new());
        if let Some(env) = raw.env {
            for (key, list, out) in [
                ("vars", &env.vars, &mut env_vars),
                ("secrets", &env.secrets, &mut secrets),
            ] {
                for (i, name) in list.iter().enumerate() {
                    if is_env_name(name) {
                        out.push(name.clone());
                    } else {
                        problems.push(format!(
                            "{}: env.{key}[{i}] {:?} is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)",
                            at(format!("/env/{key}/{i}")),
                            name
                        ));
                    }
                }
            }
        }

        let mut limits = LimitRequests::default();
        if let Some(l) = raw.limits {
            let mut take = |key: &str, v: Option<u64>| match v {
                Some(0) => {
                    problems.push(format!(
                        "{}: limits.{key} must be greater than 0",
                        at(format!("/limits/{key}"))
                    ));
                    None
                }
                v => v,
            };
            limits.memory_mb = take("memory_mb", l.memory_mb);
            limits.timeout_ms = take("timeout_ms", l.timeout_ms);
            limits.output_kb = take("output_kb", l.output_kb);
            limits.log_kb = take("log_kb", l.log_kb);
        }

        if !problems.is_empty() {
            return Err(fail(problems));
        }
        Ok(Manifest {
            path: Some(path.to_owned()),
            deprecated: raw.deprecated.unwrap_or(false),
            network,
            dirs,
            env_vars,
            secrets,
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
        for d in &self.dirs {
            let mode = if d.writable { "read-write" } else { "read-only" };
            lines.push(format!("dir: {} -> {} ({mode})", d.host.display(), d.guest));
        }
        for v in &self.env_vars {
            lines.push(format!("env: {v}"));
        }
        for v in &self.secrets {
            lines.push(format!("secret: {v}"));
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
             [[dirs]]\nhost = \"{}\"\nguest = \"/data\"\n[env]\nvars = [\"LANG\"]\nsecrets = [\"API_KEY\"]\n\
             [limits]\nmemory_mb = 32\ntimeout_ms = 5000\noutput_kb = 256\nlog_kb = 16\n",
            dir.display()
        );
        let m = parse(&text).unwrap();
        assert!(m.deprecated);
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
        assert_eq!(m.secrets, ["API_KEY"]);
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
        let p = &err.problems;
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

    #[test]
    fn host_grants_parse_strictly() {
        assert!(HostGrant::parse("*.example.com").is_err());
        assert!(HostGrant::parse("example.com:0").is_err());
        assert!(HostGrant::parse("example.com:http").is_err());
        assert_eq!(HostGrant::parse("Example.COM:8443").unwrap().host, "example.com");
        assert_eq!(HostGrant::parse("::1").unwrap().ip, Some("::1".parse().unwrap()));
    }

    #[test]
    fn limits_are_clamped_to_caps() {
        let caps = Limits::default();
        let asked = LimitRequests {
            memory_mb: Some(10_000),
            timeout_ms: Some(50),
            ..Default::default()
        };
        let (l, notes) = EffectiveLimits::resolve(&asked, &caps);
        assert_eq!(l.memory_mb, caps.memory_mb);
        assert_eq!(l.timeout_ms, 50);
        assert_eq!(l.output_kb, caps.output_kb);
        assert_eq!(notes.len(), 1);
    }
}
