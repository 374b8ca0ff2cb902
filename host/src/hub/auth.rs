//! Who is calling and what they may call: bearer tokens from the configuration,
//! allowlist patterns, and the loopback-only rule when no token is configured.
//!
//! Secrets are read once at start-up (a missing variable or file is a start-up error
//! naming the token) and kept only as SHA-256 digests, compared in constant time so a
//! caller cannot learn a secret byte by byte from response times.

use super::quota::StorageQuota;
use crate::config::{LOCAL_PRINCIPAL, StorageConfig, TokenConfig};
use std::net::SocketAddr;
use std::sync::Arc;

/// The principal a request runs as: the token's name (the owner of everything
/// stored for it, recorded in the audit log), the operations it may call and what it
/// may keep stored. Only the hub makes one (from a token, or for the local operator),
/// so no other module can grant itself every operation or everyone's data.
#[derive(Clone, Debug)]
pub struct Caller {
    name: String,
    allowlist: Allowlist,
    operator: bool,
    quota: Arc<StorageQuota>,
}

/// Whose stored items (sessions, call and accounting records) a listing shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Visible {
    /// Every principal's (an operator who named none).
    All,
    /// One principal's.
    Only(String),
    /// Nobody's: a non-operator asked for another principal's.
    Nothing,
}

impl Visible {
    /// Whether an item owned by `principal` is shown.
    pub fn admits(&self, principal: &str) -> bool {
        match self {
            Visible::All => true,
            Visible::Only(p) => p == principal,
            Visible::Nothing => false,
        }
    }

    /// The one principal a store filters on; `None` for everyone's.
    pub fn principal(&self) -> Option<&str> {
        match self {
            Visible::Only(p) => Some(p),
            Visible::All | Visible::Nothing => None,
        }
    }
}

impl Caller {
    /// The local operator: loopback clients when no token is configured, and the
    /// processes the operator starts (the CLI, MCP over stdio).
    pub(super) fn local(quota: Arc<StorageQuota>) -> Caller {
        Caller {
            name: LOCAL_PRINCIPAL.into(),
            allowlist: Allowlist::all(),
            operator: true,
            quota,
        }
    }

    /// Test and bench hook: a caller no token vouches for (not an operator, no
    /// storage limits). Production callers come from `Hub::authenticate` and
    /// `Hub::local_operator`.
    #[doc(hidden)]
    pub fn unchecked(name: &str, allowlist: Allowlist) -> Caller {
        Caller {
            name: name.to_string(),
            allowlist,
            operator: false,
            quota: Arc::new(StorageQuota::unlimited()),
        }
    }

    /// Whether this caller may read and manage an item owned by `principal`: its
    /// own, or anyone's for an operator. Every route that takes an id decides here,
    /// and answers an item it may not see exactly as a missing one.
    pub fn may_access(&self, principal: &str) -> bool {
        self.operator || self.name == principal
    }

    /// The one principal whose items this caller may reach; `None` for an
    /// operator, who reaches everyone's.
    pub fn own_only(&self) -> Option<&str> {
        (!self.operator).then_some(self.name.as_str())
    }

    /// Whose items a listing shows: `requested` (`?principal=`) narrows an
    /// operator's view to one principal; anyone else sees only their own, and
    /// nothing when they ask for another's.
    pub fn visible(&self, requested: Option<&str>) -> Visible {
        match (self.operator, requested) {
            (true, None) => Visible::All,
            (true, Some(p)) => Visible::Only(p.to_string()),
            (false, Some(p)) if p != self.name => Visible::Nothing,
            (false, _) => Visible::Only(self.name.clone()),
        }
    }

    /// What this principal may keep stored.
    pub fn quota(&self) -> &StorageQuota {
        &self.quota
    }

    /// Whether this caller may decide pending approvals: the local operator, and
    /// tokens configured with `operator = true`.
    pub fn is_operator(&self) -> bool {
        self.operator
    }

    /// The token's name (`local` for the local operator).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The operation patterns this caller may call.
    pub fn allowlist(&self) -> &Allowlist {
        &self.allowlist
    }

    /// Whether this caller may call `tool` (`plugin.operation`).
    pub fn may_call(&self, tool: &str) -> bool {
        self.allowlist.allows(tool)
    }
}

/// Operation patterns: `*`, `weather.*`, `text.slugify`, or any glob with `*`.
/// Deny by default: an empty list allows nothing.
#[derive(Clone, Debug)]
pub struct Allowlist {
    patterns: Arc<[String]>,
}

impl Allowlist {
    /// An allowlist of `patterns` (surrounding whitespace trimmed).
    pub fn new(patterns: &[String]) -> Allowlist {
        Allowlist {
            patterns: patterns.iter().map(|p| p.trim().to_string()).collect(),
        }
    }

    /// The allowlist that allows every operation (`*`).
    pub fn all() -> Allowlist {
        Allowlist::new(&["*".to_string()])
    }

    /// Whether some pattern matches `tool` (`plugin.operation`).
    pub fn allows(&self, tool: &str) -> bool {
        self.patterns
            .iter()
            .any(|p| glob_match(p.as_bytes(), tool.as_bytes()))
    }

    /// The patterns, trimmed, in configuration order.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }
}

/// `*` matches any run of characters (dots included); everything else is literal.
fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    // Iterative matcher with one backtrack point: linear for patterns with one `*`,
    // O(n*m) at worst, and patterns are short operator-written strings.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Why a request is refused. Surfaces answer 401 with the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// Tokens are configured and the request has no `Authorization: Bearer`.
    MissingToken,
    /// The bearer token matches no configured token.
    InvalidToken,
    /// No tokens are configured and the peer is not on loopback.
    NotLoopback {
        /// The remote address the request came from.
        peer: SocketAddr,
    },
}

impl std::fmt::Display for AuthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthError::MissingToken => {
                f.write_str("this hub requires a bearer token: send 'Authorization: Bearer <token>'")
            }
            AuthError::InvalidToken => f.write_str("the bearer token is not valid for this hub"),
            AuthError::NotLoopback { peer } => write!(
                f,
                "no client tokens are configured, so this hub only serves loopback clients ({} is not one); configure [[tokens]] to allow remote clients",
                peer.ip()
            ),
        }
    }
}

impl std::error::Error for AuthError {}

impl AuthError {
    /// Stable code for the JSON error body.
    pub fn code(&self) -> &'static str {
        match self {
            AuthError::MissingToken | AuthError::InvalidToken => "unauthorized",
            AuthError::NotLoopback { .. } => "forbidden",
        }
    }
}

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

struct Token {
    digest: [u8; 32],
    caller: Caller,
}

/// The configured tokens, checked on every request.
pub(crate) struct Authenticator {
    tokens: Vec<Token>,
    /// The local operator's storage limits (`[storage]`'s defaults).
    local: Arc<StorageQuota>,
}

impl Authenticator {
    /// Reads every token's secret now, so a missing one stops start-up; storage
    /// limits not set on a token come from `storage`.
    pub(crate) fn from_config(
        tokens: &[TokenConfig],
        storage: &StorageConfig,
    ) -> Result<Authenticator, TokenError> {
        let mut out: Vec<Token> = Vec::with_capacity(tokens.len());
        for t in tokens {
            let secret = read_secret(t)?;
            let digest = sha256(secret.as_bytes());
            if let Some(other) = out.iter().find(|o| o.digest == digest) {
                return Err(TokenError::Duplicate {
                    first: other.caller.name.clone(),
                    second: t.name.clone(),
                });
            }
            out.push(Token {
                digest,
                caller: Caller {
                    name: t.name.clone(),
                    allowlist: Allowlist::new(&t.allow),
                    operator: t.operator,
                    quota: Arc::new(StorageQuota::of_token(t, storage)),
                },
            });
        }
        Ok(Authenticator {
            tokens: out,
            local: Arc::new(StorageQuota::defaults(storage)),
        })
    }

    /// The local operator.
    pub(crate) fn local(&self) -> Caller {
        Caller::local(self.local.clone())
    }

    /// The caller a request runs as; `bearer` is the token without the `Bearer ` prefix.
    pub(crate) fn authenticate(&self, bearer: Option<&str>, peer: SocketAddr) -> Result<Caller, AuthError> {
        if self.tokens.is_empty() {
            return if peer.ip().is_loopback() {
                Ok(self.local())
            } else {
                Err(AuthError::NotLoopback { peer })
            };
        }
        let presented = bearer
            .map(str::trim)
            .filter(|b| !b.is_empty())
            .ok_or(AuthError::MissingToken)?;
        let digest = sha256(presented.as_bytes());
        // Compare against every token without stopping early: time does not depend on
        // which token (if any) matched.
        let mut found: Option<&Token> = None;
        for t in &self.tokens {
            if constant_time_eq(&t.digest, &digest) {
                found = Some(t);
            }
        }
        Ok(found.ok_or(AuthError::InvalidToken)?.caller.clone())
    }
}

fn read_secret(t: &TokenConfig) -> Result<String, TokenError> {
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

fn sha256(bytes: &[u8]) -> [u8; 32] {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    d.as_ref().try_into().expect("SHA-256 is 32 bytes")
}

/// Equal-length comparison whose time does not depend on where the bytes differ.
fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let mut diff = 0u8;
    for i in 0..32 {
        diff |= a[i] ^ b[i];
    }
    // black_box keeps the optimizer from turning the fold into an early exit.
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_dir::TempDir;

    fn token(name: &str, file: &std::path::Path, allow: &[&str]) -> TokenConfig {
        TokenConfig {
            name: name.into(),
            secret_env: None,
            secret_file: Some(file.to_owned()),
            allow: allow.iter().map(|s| s.to_string()).collect(),
            ..TokenConfig::default()
        }
    }

    fn secret_file(dir: &std::path::Path, name: &str, secret: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, secret).unwrap();
        path
    }

    #[test]
    fn patterns_match_namespaces_exact_names_and_everything() {
        let a = Allowlist::new(&["weather.*".into(), "text.slugify".into()]);
        assert!(a.allows("weather.forecast"));
        assert!(a.allows("text.slugify"));
        assert!(!a.allows("text.upper"));
        assert!(!a.allows("weatherx.forecast"));
        assert!(Allowlist::all().allows("anything.at_all"));
        assert!(!Allowlist::new(&[]).allows("text.slugify"));
        assert!(Allowlist::new(&["*.get_*".into()]).allows("kv.get_value"));
        assert!(!Allowlist::new(&["*.get_*".into()]).allows("kv.set_value"));
    }

    #[test]
    fn tokens_authenticate_with_their_allowlist() {
        let dir = TempDir::new("auth");
        let auth = Authenticator::from_config(
            &[
                token("ci", &secret_file(&dir, "ci", "s3cret-ci\n"), &["text.*"]),
                token("ops", &secret_file(&dir, "ops", "s3cret-ops"), &["*"]),
            ],
            &StorageConfig::default(),
        )
        .unwrap();
        let remote: SocketAddr = "10.1.2.3:5000".parse().unwrap();
        let caller = auth.authenticate(Some("s3cret-ci"), remote).unwrap();
        assert_eq!(caller.name(), "ci");
        assert!(caller.may_call("text.upper") && !caller.may_call("calc.eval"));
        assert_eq!(
            auth.authenticate(Some("s3cret-ops"), remote).unwrap().name(),
            "ops"
        );
        assert_eq!(
            auth.authenticate(Some("wrong"), remote).unwrap_err(),
            AuthError::InvalidToken
        );
        // Loopback gets no free pass once tokens exist.
        let local: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        assert_eq!(
            auth.authenticate(None, local).unwrap_err(),
            AuthError::MissingToken
        );
    }

    #[test]
    fn without_tokens_only_loopback_is_served() {
        let auth = Authenticator::from_config(&[], &StorageConfig::default()).unwrap();
        assert_eq!(
            auth.authenticate(None, "127.0.0.1:1".parse().unwrap())
                .unwrap()
                .name(),
            "local"
        );
        assert_eq!(
            auth.authenticate(None, "[::1]:1".parse().unwrap())
                .unwrap()
                .name(),
            "local"
        );
        let err = auth
            .authenticate(None, "192.168.1.9:1".parse().unwrap())
            .unwrap_err();
        assert!(err.to_string().contains("192.168.1.9"), "{err}");
        assert_eq!(err.code(), "forbidden");
    }

    #[test]
    fn missing_secrets_are_startup_errors_naming_the_token() {
        let missing_env = TokenConfig {
            name: "bot".into(),
            secret_env: Some("WASMHUB_TEST_SURELY_UNSET_VAR".into()),
            secret_file: None,
            allow: vec![],
            ..TokenConfig::default()
        };
        let err = Authenticator::from_config(&[missing_env], &StorageConfig::default())
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("tokens.bot") && err.contains("WASMHUB_TEST_SURELY_UNSET_VAR"),
            "{err}"
        );
        let dir = TempDir::new("auth");
        let err =
            Authenticator::from_config(&[token("f", &dir.join("absent"), &[])], &StorageConfig::default())
                .err()
                .unwrap()
                .to_string();
        assert!(err.contains("tokens.f") && err.contains("absent"), "{err}");
        let err = Authenticator::from_config(
            &[token("e", &secret_file(&dir, "e", "\n"), &[])],
            &StorageConfig::default(),
        )
        .err()
        .unwrap()
        .to_string();
        assert!(err.contains("empty"), "{err}");
    }

    #[test]
    fn principals_see_their_own_items_and_operators_everyones() {
        let bob = Caller::unchecked("bob", Allowlist::all());
        assert!(bob.may_access("bob") && !bob.may_access("alice") && !bob.may_access("local"));
        assert_eq!(bob.visible(None), Visible::Only("bob".into()));
        assert_eq!(bob.visible(Some("bob")), Visible::Only("bob".into()));
        assert_eq!(bob.visible(Some("alice")), Visible::Nothing);
        assert!(!Visible::Nothing.admits("bob"));
        let ops = Caller::local(Arc::new(StorageQuota::unlimited()));
        assert!(ops.may_access("alice") && ops.may_access("local"));
        assert_eq!(ops.visible(None), Visible::All);
        assert_eq!(ops.visible(Some("alice")), Visible::Only("alice".into()));
        assert_eq!(Visible::All.principal(), None);
    }

    #[test]
    fn a_tokens_storage_limits_travel_with_its_caller() {
        let dir = TempDir::new("auth");
        let mut capped = token("bob", &secret_file(&dir, "bob", "s3cret-bob"), &["*"]);
        capped.max_sessions = Some(3);
        let storage = StorageConfig::default();
        let auth = Authenticator::from_config(&[capped], &storage).unwrap();
        let bob = auth
            .authenticate(Some("s3cret-bob"), "10.0.0.1:1".parse().unwrap())
            .unwrap();
        assert_eq!(bob.quota().sessions.limit, 3);
        assert_eq!(&*bob.quota().sessions.key, "tokens[bob].max_sessions");
        assert_eq!(&*bob.quota().stored_bytes.key, "storage.max_stored_mb");
        assert_eq!(auth.local().quota().sessions.limit, storage.max_sessions);
    }

    #[test]
    fn constant_time_eq_compares_all_bytes() {
        let a = sha256(b"a");
        let mut b = a;
        assert!(constant_time_eq(&a, &b));
        b[31] ^= 1;
        assert!(!constant_time_eq(&a, &b));
    }
}
