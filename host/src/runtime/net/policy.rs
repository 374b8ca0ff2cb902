//! Who a plugin may reach: the grants of its manifest (host and port, before any
//! DNS or socket work) and which resolved addresses are public. Pure decisions, no
//! I/O; `hooks` applies them to each wasi:http request.

use super::super::manifest::HostGrant;
use crate::http_client::is_public;
use std::fmt;
use std::net::{IpAddr, SocketAddr};

/// The hosts one plugin may reach.
#[derive(Debug, Default)]
pub(crate) struct NetPolicy {
    grants: Vec<HostGrant>,
    /// Requests carry the call's `traceparent` (`network.trace_context`).
    pub trace_context: bool,
}

impl NetPolicy {
    pub(crate) fn new(grants: Vec<HostGrant>) -> NetPolicy {
        NetPolicy {
            grants,
            trace_context: false,
        }
    }

    /// This policy, with requests carrying the call's trace context or not.
    pub(crate) fn with_trace_context(mut self, on: bool) -> NetPolicy {
        self.trace_context = on;
        self
    }

    /// The grant covering `host:port` (host lowercase, without brackets); a grant
    /// without a port covers only the scheme's default port.
    pub(crate) fn grant_for(&self, host: &str, port: u16, default_port: u16) -> Option<&HostGrant> {
        self.grants.iter().find(|g| g.covers(host, port, default_port))
    }
}

/// Why a request was denied before any network work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Denied {
    /// Neither `http` nor `https` (as the URI had it, if it had one).
    Scheme(Option<String>),
    NoHost,
    /// No grant of the manifest covers `host:port`.
    NotGranted {
        host: String,
        port: u16,
    },
}

impl fmt::Display for Denied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Denied::Scheme(scheme) => write!(f, "unsupported scheme {scheme:?}"),
            Denied::NoHost => f.write_str("the URL has no host"),
            Denied::NotGranted { host, port } => {
                write!(f, "{host}:{port} is not granted by the plugin's manifest")
            }
        }
    }
}

impl std::error::Error for Denied {}

/// A request that passed the grant check: where to connect and how.
#[derive(Debug)]
pub(crate) struct Target {
    /// Lowercase, without brackets or a trailing dot.
    pub host: String,
    pub port: u16,
    pub tls: bool,
    /// The grant is this IP literal: the address may be private.
    pub literal: Option<IpAddr>,
}

impl NetPolicy {
    /// Checks `uri` against the grants: the scheme must be http(s) and a grant must
    /// cover its host and port.
    pub(crate) fn check(&self, uri: &http::Uri) -> Result<Target, Denied> {
        let tls = match uri.scheme() {
            Some(s) if *s == http::uri::Scheme::HTTPS => true,
            Some(s) if *s == http::uri::Scheme::HTTP => false,
            other => return Err(Denied::Scheme(other.map(|s| s.as_str().to_string()))),
        };
        let raw_host = uri.host().ok_or(Denied::NoHost)?;
        let host = raw_host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim_end_matches('.')
            .to_ascii_lowercase();
        let default_port = if tls { 443 } else { 80 };
        let port = uri.port_u16().unwrap_or(default_port);
        let grant = self
            .grant_for(&host, port, default_port)
            .ok_or_else(|| Denied::NotGranted {
                host: host.clone(),
                port,
            })?;
        Ok(Target {
            literal: grant.ip,
            host,
            port,
            tls,
        })
    }
}

/// The addresses of `resolved` a request may dial: the public ones only (a grant
/// of an IP literal bypasses resolution, and so this filter).
pub(super) fn public_only(resolved: &[SocketAddr]) -> Vec<SocketAddr> {
    resolved.iter().copied().filter(|a| is_public(a.ip())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_match_host_and_port() {
        let policy = NetPolicy::new(
            [
                "en.wikipedia.org",
                "127.0.0.1:8080",
                "[::1]:9000",
                "api.example.com:8443",
            ]
            .iter()
            .map(|g| HostGrant::parse(g).unwrap())
            .collect(),
        );
        assert!(policy.grant_for("en.wikipedia.org", 443, 443).is_some());
        assert!(policy.grant_for("en.wikipedia.org", 80, 80).is_some());
        assert!(
            policy.grant_for("en.wikipedia.org", 8080, 443).is_none(),
            "no port = default port only"
        );
        assert!(policy.grant_for("de.wikipedia.org", 443, 443).is_none());
        assert!(policy.grant_for("127.0.0.1", 8080, 80).unwrap().ip.is_some());
        assert!(policy.grant_for("127.0.0.1", 8081, 80).is_none());
        assert!(policy.grant_for("::1", 9000, 80).is_some());
        assert!(policy.grant_for("api.example.com", 443, 443).is_none());
        assert!(policy.grant_for("api.example.com", 8443, 443).is_some());
    }
}
