//! Who a plugin may reach: the grants of its manifest (host and port, before any
//! DNS or socket work) and which resolved addresses are public. Pure decisions, no
//! I/O; `hooks` applies them to each wasi:http request.

use super::super::manifest::HostGrant;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// The hosts one plugin may reach.
#[derive(Debug, Default)]
pub(crate) struct NetPolicy {
    grants: Vec<HostGrant>,
}

impl NetPolicy {
    pub(crate) fn new(grants: Vec<HostGrant>) -> NetPolicy {
        NetPolicy { grants }
    }

    /// The grant covering `host:port` (host lowercase, without brackets); a grant
    /// without a port covers only the scheme's default port.
    pub(crate) fn grant_for(&self, host: &str, port: u16, default_port: u16) -> Option<&HostGrant> {
        let ip = host.parse::<IpAddr>().ok();
        self.grants.iter().find(|g| {
            let same_host = match (g.ip, ip) {
                (Some(a), Some(b)) => a == b,
                (None, None) => g.host == host,
                _ => false,
            };
            same_host && g.port.unwrap_or(default_port) == port
        })
    }
}

/// Whether `ip` is an ordinary public unicast address. Everything a plugin could use
/// to reach the host itself or its internal network is excluded.
pub(super) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let s = v6.segments();
            // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) embed an IPv4 address.
            if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
                return is_public_v4(Ipv4Addr::new(
                    (s[6] >> 8) as u8,
                    s[6] as u8,
                    (s[7] >> 8) as u8,
                    s[7] as u8,
                ));
            }
            if s[0] == 0x2002 {
                return is_public_v4(Ipv4Addr::new(
                    (s[1] >> 8) as u8,
                    s[1] as u8,
                    (s[2] >> 8) as u8,
                    s[2] as u8,
                ));
            }
            !(v6.is_unspecified()
                || v6.is_loopback()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
                || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
                || (s[0] & 0xffc0) == 0xfec0 // site-local fec0::/10 (deprecated)
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
                || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]) // discard-only 100::/64
                || s[0..6] == [0, 0, 0, 0, 0, 0]) // IPv4-compatible ::a.b.c.d
        }
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0 // "this network"
        || (a == 100 && (b & 0xc0) == 64) // shared address space (CGNAT) 100.64/10
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (b & 0xfe) == 18) // benchmarking 198.18/15
        || a >= 240) // reserved
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

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn private_and_special_addresses_are_not_public() {
        for s in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "255.255.255.255",
            "224.0.0.1",
            "198.18.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "2001:db8::1",
            "::127.0.0.1",
        ] {
            assert!(!is_public(ip(s)), "{s} must not be public");
        }
        for s in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(is_public(ip(s)), "{s} must be public");
        }
    }

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
