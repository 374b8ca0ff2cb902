//! Registry credentials and challenges: a username and password from the
//! environment (`WASMHUB_REGISTRY_USERNAME`, `WASMHUB_REGISTRY_PASSWORD`) or from a
//! Docker config file's `auths` (`$DOCKER_CONFIG/config.json`, else
//! `~/.docker/config.json`), and the `WWW-Authenticate` challenge of a 401: `Basic`
//! (send the credentials) or `Bearer realm=…,service=…,scope=…` (get a token from
//! the realm, with the credentials if any, then send the token).

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Environment variable of the registry username.
pub const USERNAME_ENV: &str = "WASMHUB_REGISTRY_USERNAME";
/// Environment variable of the registry password (or token).
pub const PASSWORD_ENV: &str = "WASMHUB_REGISTRY_PASSWORD";

/// A username and password for one registry.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The username.
    pub username: String,
    /// The password or access token.
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credentials({}, [redacted])", self.username)
    }
}

impl Credentials {
    /// The `Authorization: Basic …` value.
    pub fn basic(&self) -> String {
        format!(
            "Basic {}",
            crate::base64::encode(format!("{}:{}", self.username, self.password).as_bytes())
        )
    }

    /// The credentials for `registry` (`host[:port]`): the environment's, else the
    /// Docker config file's; `Ok(None)` when there are none. The error names the
    /// config file that cannot be read.
    pub fn find(registry: &str) -> Result<Option<Credentials>, ConfigFileError> {
        if let (Ok(username), Ok(password)) = (std::env::var(USERNAME_ENV), std::env::var(PASSWORD_ENV)) {
            return Ok(Some(Credentials { username, password }));
        }
        let Some(path) = docker_config_path() else {
            return Ok(None);
        };
        match std::fs::read(&path) {
            Ok(bytes) => from_docker_config(&bytes, registry).map_err(|why| ConfigFileError { path, why }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ConfigFileError {
                path,
                why: ConfigFileProblem::Read(e),
            }),
        }
    }
}

/// A Docker config file that cannot be used.
#[derive(Debug)]
pub struct ConfigFileError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub why: ConfigFileProblem,
}

/// What is wrong with a Docker config file.
#[derive(Debug)]
pub enum ConfigFileProblem {
    /// It cannot be read.
    Read(std::io::Error),
    /// It is not the JSON of a Docker config.
    NotJson(serde_json::Error),
    /// The `auth` of this `auths` key is not base64 of `user:password`.
    BadAuth(String),
}

impl std::fmt::Display for ConfigFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "registry credentials in {}: ", self.path.display())?;
        match &self.why {
            ConfigFileProblem::Read(e) => e.fmt(f),
            ConfigFileProblem::NotJson(e) => e.fmt(f),
            ConfigFileProblem::BadAuth(key) => write!(f, "auths.{key:?}.auth is not base64 of user:password"),
        }
    }
}

impl std::error::Error for ConfigFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.why {
            ConfigFileProblem::Read(e) => Some(e),
            ConfigFileProblem::NotJson(e) => Some(e),
            ConfigFileProblem::BadAuth(_) => None,
        }
    }
}

fn docker_config_path() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DOCKER_CONFIG") {
        return Some(Path::new(&dir).join("config.json"));
    }
    std::env::var_os("HOME").map(|home| Path::new(&home).join(".docker/config.json"))
}

#[derive(Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, DockerAuth>,
}

#[derive(Deserialize)]
struct DockerAuth {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
}

/// The entry of `registry` in a Docker config file's `auths` (keys may carry a
/// scheme and a path, as `docker login` writes for Docker Hub).
fn from_docker_config(bytes: &[u8], registry: &str) -> Result<Option<Credentials>, ConfigFileProblem> {
    let config: DockerConfig = serde_json::from_slice(bytes).map_err(ConfigFileProblem::NotJson)?;
    let entry = config.auths.iter().find(|(key, _)| {
        let key = key.trim_start_matches("https://").trim_start_matches("http://");
        key.split('/').next() == Some(registry)
    });
    let Some((key, auth)) = entry else { return Ok(None) };
    if let Some(encoded) = &auth.auth {
        let decoded = crate::base64::decode(encoded)
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| ConfigFileProblem::BadAuth(key.clone()))?;
        let (username, password) = decoded
            .split_once(':')
            .ok_or_else(|| ConfigFileProblem::BadAuth(key.clone()))?;
        return Ok(Some(Credentials {
            username: username.into(),
            password: password.into(),
        }));
    }
    match (&auth.username, &auth.password) {
        (Some(u), Some(p)) => Ok(Some(Credentials {
            username: u.clone(),
            password: p.clone(),
        })),
        _ => Ok(None),
    }
}

/// A parsed `WWW-Authenticate` challenge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Challenge {
    /// `Basic realm=…`: send the credentials.
    Basic,
    /// `Bearer realm=…,service=…,scope=…`: get a token from `realm`.
    Bearer {
        /// The token endpoint URL.
        realm: String,
        /// The `service` parameter, when given.
        service: Option<String>,
        /// The `scope` parameter, when given.
        scope: Option<String>,
    },
}

impl Challenge {
    /// Parses a header value; `None` for other schemes or a Bearer without realm.
    pub(super) fn parse(value: &str) -> Option<Challenge> {
        let value = value.trim();
        let (scheme, params) = value.split_once(' ').unwrap_or((value, ""));
        if scheme.eq_ignore_ascii_case("basic") {
            return Some(Challenge::Basic);
        }
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let params = parse_params(params);
        let get = |k: &str| {
            params
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(k))
                .map(|(_, v)| v.clone())
        };
        Some(Challenge::Bearer {
            realm: get("realm")?,
            service: get("service"),
            scope: get("scope"),
        })
    }
}

/// `k=v, k="v, with commas"` into pairs (RFC 7235 auth-params; `\` escapes in quotes).
fn parse_params(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let name: String = std::iter::from_fn(|| chars.next_if(|c| *c != '=' && *c != ',')).collect();
        if name.is_empty() {
            return out;
        }
        if chars.next() != Some('=') {
            continue;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => value.extend(chars.next()),
                    c => value.push(c),
                }
            }
        } else {
            value = std::iter::from_fn(|| chars.next_if(|c| *c != ',')).collect();
        }
        out.push((name.trim().to_string(), value.trim().to_string()));
    }
}

/// The token of a token endpoint's JSON answer (`token`, or OAuth's `access_token`).
pub(super) fn token_from(body: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Answer {
        token: Option<String>,
        access_token: Option<String>,
    }
    let a: Answer = serde_json::from_slice(body).ok()?;
    a.token.or(a.access_token).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_parse_with_quoted_commas() {
        let c = Challenge::parse(
            r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push""#,
        );
        assert_eq!(
            c,
            Some(Challenge::Bearer {
                realm: "https://auth.example/token".into(),
                service: Some("registry.example".into()),
                scope: Some("repository:a/b:pull,push".into()),
            })
        );
        assert_eq!(
            Challenge::parse(r#"Basic realm="Registry Realm""#),
            Some(Challenge::Basic)
        );
        assert_eq!(Challenge::parse("Bearer service=x"), None, "no realm");
        assert_eq!(Challenge::parse("Negotiate abc"), None);
        let plain = Challenge::parse("bearer realm=http://127.0.0.1:1/t, scope=repository:x:pull");
        assert!(matches!(plain, Some(Challenge::Bearer { scope: Some(s), .. }) if s == "repository:x:pull"));
    }

    #[test]
    fn docker_config_auths_are_found_by_registry() {
        let config = br#"{"auths": {"https://reg.example:5000/v1/": {"auth": "dXNlcjpwYTpzcw=="},
                                      "other.example": {"username": "u", "password": "p"}}}"#;
        let c = from_docker_config(config, "reg.example:5000").unwrap().unwrap();
        assert_eq!((c.username.as_str(), c.password.as_str()), ("user", "pa:ss"));
        assert_eq!(c.basic(), "Basic dXNlcjpwYTpzcw==");
        let c = from_docker_config(config, "other.example").unwrap().unwrap();
        assert_eq!(c.username, "u");
        assert_eq!(from_docker_config(config, "none.example").unwrap(), None);
        let bad = br#"{"auths": {"x": {"auth": "!!"}}}"#;
        assert!(
            matches!(from_docker_config(bad, "x").unwrap_err(), ConfigFileProblem::BadAuth(key) if key == "x")
        );
        assert!(matches!(
            from_docker_config(b"{", "x").unwrap_err(),
            ConfigFileProblem::NotJson(_)
        ));
        assert_eq!(token_from(br#"{"access_token":"t1"}"#).as_deref(), Some("t1"));
        assert_eq!(token_from(br#"{"token":""}"#), None);
    }
}
