//! Who is calling and what they may call: bearer tokens from the configuration,
//! allowlist patterns, the loopback-only rule when no token is configured, and
//! OAuth grants vouched for by a [`TokenVerifier`] (a grant runs under its
//! principal's token policy, narrowed to its scopes).
//!
//! Secrets are read once at start-up (a missing variable or file is a start-up error
//! naming the token) and kept only as SHA-256 digests, compared in constant time so a
//! caller cannot learn a secret byte by byte from response times.

use super::grant::{Grant, Rejection, Resource, Scope, Scopes, TokenVerifier};
mod secret;

use super::quota::StorageQuota;
use crate::config::{LOCAL_PRINCIPAL, StorageConfig, TokenApprovals, TokenConfig};
pub(crate) use secret::TokenError;
use secret::{constant_time_eq, read_secret, sha256};
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

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
    /// What the credential may do: every scope for a configured token.
    scopes: Scopes,
    /// The OAuth client the request came through, for a grant.
    client: Option<Arc<str>>,
    /// Approval policies its calls must satisfy too (agent profiles'), outermost
    /// first.
    tightened: Arc<[ProfileApprovals]>,
}

/// An agent profile's approval policy, which tightens its caller's: each call's
/// decision is the strictest of the caller's policy and every such one.
#[derive(Clone, Debug)]
pub struct ProfileApprovals {
    /// Where its keys live, for the decisions that name them
    /// (`agents[name=NAME].approvals`).
    pub prefix: String,
    /// The policy, in the tokens' vocabulary.
    pub policy: TokenApprovals,
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
            scopes: Scopes::all(),
            client: None,
            tightened: Arc::new([]),
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
            scopes: Scopes::all(),
            client: None,
            tightened: Arc::new([]),
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

    /// The same principal, calling only what both its allowlist and `patterns`
    /// allow (an agent profile's `allow`).
    pub fn within(&self, patterns: &[String]) -> Caller {
        let mut narrowed = self.clone();
        narrowed.allowlist = self.allowlist.and(patterns);
        narrowed
    }

    /// The same principal, its calls also under `approvals` (an agent profile's
    /// policy): a profile may tighten its caller's policy, never loosen it.
    pub fn tightened(&self, approvals: ProfileApprovals) -> Caller {
        let mut tightened = self.clone();
        tightened.tightened = self.tightened.iter().cloned().chain([approvals]).collect();
        tightened
    }

    /// The agent profiles' approval policies its calls must satisfy too.
    pub fn profile_approvals(&self) -> &[ProfileApprovals] {
        &self.tightened
    }

    /// Whether this caller may call `tool` (`plugin.operation`).
    pub fn may_call(&self, tool: &str) -> bool {
        self.allowlist.allows(tool)
    }

    /// The OAuth client of a grant (recorded beside the principal); `None` for a
    /// configured token or the local operator.
    pub fn client(&self) -> Option<&str> {
        self.client.as_deref()
    }

    /// This principal's rights narrowed to a grant's: its scopes, and operator
    /// rights only when both have them.
    fn narrowed(mut self, grant: &Grant) -> Caller {
        self.operator = self.operator && grant.scopes.has(Scope::Operator);
        self.scopes = grant.scopes;
        self.client = Some(grant.client_id.as_str().into());
        self
    }
}

/// What a request presents: its bearer token (without `Bearer `), where it comes
/// from, which protected resource it asks for and the scope its route needs.
#[derive(Debug, Clone, Copy)]
pub struct Credentials<'a> {
    /// The bearer token, if any.
    pub bearer: Option<&'a str>,
    /// The remote address.
    pub peer: SocketAddr,
    /// The resource the route belongs to (an OAuth token's audience).
    pub resource: Resource,
    /// The scope the route needs.
    pub needs: Scope,
}

/// Operation patterns: `*`, `weather.*`, `text.slugify`, or any glob with `*`.
/// Deny by default: an empty list allows nothing.
#[derive(Clone, Debug)]
pub struct Allowlist {
    patterns: Arc<[String]>,
    /// Patterns a tool must match too (an agent profile's narrowing).
    also: Option<Arc<Allowlist>>,
}

impl Allowlist {
    /// An allowlist of `patterns` (surrounding whitespace trimmed).
    pub fn new(patterns: &[String]) -> Allowlist {
        Allowlist {
            patterns: patterns.iter().map(|p| p.trim().to_string()).collect(),
            also: None,
        }
    }

    /// The tools both this allowlist and `patterns` allow.
    pub fn and(&self, patterns: &[String]) -> Allowlist {
        let mut narrower = Allowlist::new(patterns);
        narrower.also = Some(Arc::new(self.clone()));
        narrower
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
            && self.also.as_ref().is_none_or(|also| also.allows(tool))
    }

    /// Its own patterns, trimmed, in configuration order (not those of an
    /// allowlist it narrows).
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
    /// An OAuth access token was refused, and why.
    Rejected(Rejection),
    /// A valid OAuth token without the scope the route needs.
    InsufficientScope {
        /// The scope the route needs.
        needed: Scope,
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
            AuthError::Rejected(why) => f.write_str(why.reason()),
            AuthError::InsufficientScope { needed } => write!(
                f,
                "the access token lacks the scope {:?} this route needs",
                needed.as_str()
            ),
        }
    }
}

impl std::error::Error for AuthError {}

impl AuthError {
    /// Stable code for the JSON error body.
    pub fn code(&self) -> &'static str {
        match self {
            AuthError::Rejected(Rejection::UnmappedSubject) => "forbidden",
            AuthError::MissingToken | AuthError::InvalidToken | AuthError::Rejected(_) => "unauthorized",
            AuthError::NotLoopback { .. } | AuthError::InsufficientScope { .. } => "forbidden",
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
    /// What vouches for tokens that are not configured secrets (OAuth), set once
    /// when `[oauth]` is on.
    verifiers: OnceLock<Vec<Arc<dyn TokenVerifier>>>,
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
                    scopes: Scopes::all(),
                    client: None,
                    tightened: Arc::new([]),
                },
            });
        }
        Ok(Authenticator {
            tokens: out,
            local: Arc::new(StorageQuota::defaults(storage)),
            verifiers: OnceLock::new(),
        })
    }

    /// Accepts the tokens `verifiers` vouch for from now on; `false` when some
    /// were set already (they are set once, at start-up).
    pub(crate) fn accept(&self, verifiers: Vec<Arc<dyn TokenVerifier>>) -> bool {
        self.verifiers.set(verifiers).is_ok()
    }

    /// The policy of the configured token named `principal` (what a grant to
    /// that principal runs under, before its scopes narrow it).
    pub(crate) fn policy(&self, principal: &str) -> Option<Caller> {
        self.tokens
            .iter()
            .find(|t| t.caller.name == principal)
            .map(|t| t.caller.clone())
    }

    /// The local operator.
    pub(crate) fn local(&self) -> Caller {
        Caller::local(self.local.clone())
    }

    /// The caller a request presenting `creds` runs as: a configured token, a
    /// grant some verifier vouches for (narrowed to its scopes, which must hold
    /// the route's), or the local operator on loopback when no token exists.
    pub(crate) async fn authenticate(&self, creds: Credentials<'_>) -> Result<Caller, AuthError> {
        if self.tokens.is_empty() {
            return if creds.peer.ip().is_loopback() {
                Ok(self.local())
            } else {
                Err(AuthError::NotLoopback { peer: creds.peer })
            };
        }
        let presented = creds
            .bearer
            .map(str::trim)
            .filter(|b| !b.is_empty())
            .ok_or(AuthError::MissingToken)?;
        if let Some(caller) = self.configured(presented) {
            return Ok(caller);
        }
        for verifier in self.verifiers.get().into_iter().flatten() {
            match verifier.verify(presented, creds.resource).await {
                None => continue,
                Some(Err(why)) => return Err(AuthError::Rejected(why)),
                Some(Ok(grant)) => {
                    let policy = self
                        .policy(&grant.principal)
                        .ok_or(AuthError::Rejected(Rejection::UnknownPrincipal))?;
                    if !grant.scopes.has(creds.needs) {
                        return Err(AuthError::InsufficientScope { needed: creds.needs });
                    }
                    return Ok(policy.narrowed(&grant));
                }
            }
        }
        Err(AuthError::InvalidToken)
    }

    /// The configured token whose secret is `presented`.
    pub(crate) fn configured(&self, presented: &str) -> Option<Caller> {
        let digest = sha256(presented.as_bytes());
        // Compare against every token without stopping early: time does not depend on
        // which token (if any) matched.
        let mut found: Option<&Token> = None;
        for t in &self.tokens {
            if constant_time_eq(&t.digest, &digest) {
                found = Some(t);
            }
        }
        found.map(|t| t.caller.clone())
    }
}

#[cfg(test)]
mod tests;
