//! What a bearer token that is not a configured secret can vouch for: an OAuth
//! grant. The hub owns the seam ([`TokenVerifier`]) and the vocabulary (scopes,
//! the resource a route belongs to, why a token is refused); verifiers live in
//! the layers that issue or trust tokens (`crate::oauth` for the built-in
//! authorization server; an external issuer's JWT verifier slots in beside it).

use std::fmt;

/// One OAuth scope the hub knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The four meta-tools: `/mcp` and `/api/hub/*` (and the call records).
    HubTools,
    /// The chat and model routes.
    Chat,
    /// Operator rights, for principals whose token policy has them.
    Operator,
}

impl Scope {
    /// Every scope, in the order documents list them.
    pub const ALL: [Scope; 3] = [Scope::HubTools, Scope::Chat, Scope::Operator];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        crate::config::SCOPE_NAMES[self as usize]
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A set of scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Scopes(u8);

/// A scope string named a scope the hub does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownScope(pub String);

impl fmt::Display for UnknownScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown scope {:?}: this hub knows hub:tools, chat and operator",
            self.0
        )
    }
}

impl std::error::Error for UnknownScope {}

impl Scopes {
    /// Every scope (configured tokens, the local operator).
    pub fn all() -> Scopes {
        Scope::ALL.into_iter().collect()
    }

    /// The scopes of a space-separated `scope` parameter (RFC 6749 §3.3); repeated
    /// and surrounding spaces are fine, an unknown name is an error naming it.
    pub fn parse(text: &str) -> Result<Scopes, UnknownScope> {
        text.split(' ')
            .filter(|s| !s.is_empty())
            .map(|name| {
                Scope::ALL
                    .into_iter()
                    .find(|s| s.as_str() == name)
                    .ok_or_else(|| UnknownScope(name.to_string()))
            })
            .collect()
    }

    /// The scopes among `names` the hub knows, the others ignored (an external
    /// issuer's token carries its own scopes too, like `openid` or `email`).
    pub fn known<'a>(names: impl IntoIterator<Item = &'a str>) -> Scopes {
        names
            .into_iter()
            .filter_map(|name| Scope::ALL.into_iter().find(|s| s.as_str() == name))
            .collect()
    }

    /// Whether `scope` is in the set.
    pub fn has(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    /// The scopes in both sets.
    pub fn and(self, other: Scopes) -> Scopes {
        Scopes(self.0 & other.0)
    }

    /// The set without `scope`.
    pub fn without(self, scope: Scope) -> Scopes {
        Scopes(self.0 & !scope.bit())
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl FromIterator<Scope> for Scopes {
    fn from_iter<I: IntoIterator<Item = Scope>>(iter: I) -> Scopes {
        Scopes(iter.into_iter().fold(0, |bits, s| bits | s.bit()))
    }
}

impl fmt::Display for Scopes {
    /// Space-separated wire names, in [`Scope::ALL`] order.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Scope::ALL
            .into_iter()
            .filter(|s| self.has(*s))
            .map(Scope::as_str)
            .collect();
        f.write_str(&names.join(" "))
    }
}

/// Which protected resource a route belongs to (RFC 8707 audiences): `/mcp`, or
/// the hub's API root (every other route). A token bound to the API root is good
/// on every route; one bound to `/mcp` only there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// `{public_url}/mcp`.
    Mcp,
    /// `{public_url}`.
    Api,
}

impl Resource {
    /// The path after `public_url` (`/mcp`, or nothing).
    pub fn suffix(self) -> &'static str {
        match self {
            Resource::Mcp => "/mcp",
            Resource::Api => "",
        }
    }
}

/// What a verified token vouches for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The principal the person signed in as: a configured token's name, whose
    /// policy (allowlist, operator flag, storage limits) applies.
    pub principal: String,
    /// The OAuth client the grant was made to.
    pub client_id: String,
    /// The scopes granted.
    pub scopes: Scopes,
}

/// Why a token is refused (the `error_description` of `invalid_token`; never the
/// token itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// No such token.
    Unknown,
    /// Past its expiry.
    Expired,
    /// Issued for another resource.
    WrongAudience,
    /// Revoked (by the client, or with its family on a replayed refresh token).
    Revoked,
    /// Its principal is no longer a configured token.
    UnknownPrincipal,
    /// Its `nbf` is still in the future.
    NotYetValid,
    /// Issued by an issuer this hub does not trust.
    WrongIssuer,
    /// Signed with a key the issuer does not publish.
    UnknownKey,
    /// The signature does not verify.
    BadSignature,
    /// Signed with an algorithm the hub refuses (`none`, HMAC, anything else
    /// than RS256, ES256 and EdDSA).
    RefusedAlgorithm,
    /// Not a well-formed token of its kind.
    Malformed,
    /// A valid token of an external issuer whose subject maps to no configured
    /// principal (403: the token is fine, the person is not let in).
    UnmappedSubject,
}

impl Rejection {
    /// Why, for the challenge and the log.
    pub fn reason(self) -> &'static str {
        match self {
            Rejection::Unknown => "the access token is unknown",
            Rejection::Expired => "the access token expired",
            Rejection::WrongAudience => "the access token was issued for another resource",
            Rejection::Revoked => "the access token was revoked",
            Rejection::UnknownPrincipal => "the access token's principal is no longer configured",
            Rejection::NotYetValid => "the access token is not valid yet",
            Rejection::WrongIssuer => "the access token was issued by an issuer this hub does not trust",
            Rejection::UnknownKey => "the access token was signed with a key its issuer does not publish",
            Rejection::BadSignature => "the access token's signature does not verify",
            Rejection::RefusedAlgorithm => {
                "the access token's algorithm is refused: this hub accepts RS256, ES256 and EdDSA"
            }
            Rejection::Malformed => "the access token is malformed",
            Rejection::UnmappedSubject => "the access token's subject maps to no principal of this hub",
        }
    }
}

/// Something that can vouch for bearer tokens that are not configured secrets.
#[async_trait::async_trait]
pub trait TokenVerifier: Send + Sync {
    /// `None` when `token` is not this verifier's (its format); otherwise the
    /// grant for `resource`, or why it is refused. Store failures refuse (a token
    /// that cannot be checked is not accepted) and are logged by the verifier.
    async fn verify(&self, token: &str, resource: Resource) -> Option<Result<Grant, Rejection>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse_and_print_in_a_fixed_order() {
        let s = Scopes::parse("  chat hub:tools chat ").unwrap();
        assert!(s.has(Scope::Chat) && s.has(Scope::HubTools) && !s.has(Scope::Operator));
        assert_eq!(s.to_string(), "hub:tools chat");
        assert_eq!(Scopes::parse("").unwrap(), Scopes::default());
        assert!(Scopes::parse("").unwrap().is_empty());
        let err = Scopes::parse("hub:tools admin").unwrap_err();
        assert_eq!(err, UnknownScope("admin".into()));
        assert!(err.to_string().contains("\"admin\""));
        // Case matters (RFC 6749: scope tokens are case-sensitive).
        assert!(Scopes::parse("CHAT").is_err());
        assert_eq!(Scopes::all().to_string(), "hub:tools chat operator");
        assert_eq!(
            Scopes::known(["openid", "chat", "email", "CHAT"]).to_string(),
            "chat"
        );
        assert!(Scopes::known([]).is_empty());
        assert_eq!(
            Scopes::all().without(Scope::Operator).to_string(),
            "hub:tools chat"
        );
        assert_eq!(
            Scopes::all().and(Scopes::parse("operator").unwrap()).to_string(),
            "operator"
        );
    }
}
