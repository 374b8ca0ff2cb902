//! The grants of a manifest: outbound hosts (`network.allow`, parsed strictly) and
//! preopened directories.

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;

/// One granted outbound destination: `host` or `host:port`.
///
/// Without a port only the scheme's default port (80 for http, 443 for https) is
/// granted. A grant whose host is an IP literal is the only way to reach a private,
/// loopback or link-local address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostGrant {
    /// Lowercase host name, or the IP literal as written (without brackets).
    pub host: String,
    /// The granted port; `None` grants only the scheme's default port.
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

/// Why a `network.allow` entry is not a grant; each names the entry as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GrantError {
    /// It has a scheme (`https://`) or a path.
    SchemeOrPath(String),
    /// `[` without its closing `]`.
    MissingBracket(String),
    /// Something other than `:port` after `]`.
    AfterBracket(String),
    /// The port is not a number from 1 to 65535.
    BadPort {
        /// The entry as written.
        text: String,
        /// The part after `:` that is not a valid port.
        port: String,
    },
    /// Not a valid host name (or a wildcard).
    BadHost(String),
}

impl fmt::Display for GrantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GrantError::SchemeOrPath(t) => {
                write!(f, "{t:?} must be a host or host:port, without scheme or path")
            }
            GrantError::MissingBracket(t) => write!(f, "{t:?}: missing ']'"),
            GrantError::AfterBracket(t) => write!(f, "{t:?}: expected ':port' after ']'"),
            GrantError::BadPort { text, port } => {
                write!(f, "{text:?}: port {port:?} is not a number from 1 to 65535")
            }
            GrantError::BadHost(t) => write!(
                f,
                "{t:?} is not a valid host name (letters, digits, '-' and '.'; no wildcards)"
            ),
        }
    }
}

impl std::error::Error for GrantError {}

impl HostGrant {
    /// Parses `host`, `host:port`, `1.2.3.4:80`, `[::1]:8080`.
    pub fn parse(text: &str) -> Result<HostGrant, GrantError> {
        if text.contains("://") || text.contains('/') {
            return Err(GrantError::SchemeOrPath(text.to_string()));
        }
        if let Ok(ip) = text.parse::<IpAddr>() {
            return Ok(HostGrant::ip(ip, None));
        }
        let (host, port) = split_port(text)?;
        let port = match port {
            None => None,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => Some(n),
                _ => {
                    return Err(GrantError::BadPort {
                        text: text.to_string(),
                        port: p.to_string(),
                    });
                }
            },
        };
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(HostGrant::ip(ip, port));
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
            return Err(GrantError::BadHost(text.to_string()));
        }
        Ok(HostGrant { host, port, ip: None })
    }

    /// Whether this grant names `host:port` (host lowercase, without brackets): a
    /// name matches only that name, an IP literal only that address, and a grant
    /// without a port only the scheme's `default_port`.
    pub fn covers(&self, host: &str, port: u16, default_port: u16) -> bool {
        let same_host = match (self.ip, host.parse::<IpAddr>().ok()) {
            (Some(a), Some(b)) => a == b,
            (None, None) => self.host == host,
            _ => false,
        };
        same_host && self.port.unwrap_or(default_port) == port
    }

    fn ip(ip: IpAddr, port: Option<u16>) -> HostGrant {
        HostGrant {
            host: ip.to_string(),
            port,
            ip: Some(ip),
        }
    }
}

/// Splits `host:port` or `[v6]:port` into the host and the port text, if any.
fn split_port(text: &str) -> Result<(&str, Option<&str>), GrantError> {
    let Some(rest) = text.strip_prefix('[') else {
        return Ok(match text.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (text, None),
        });
    };
    let (ip, after) = rest
        .split_once(']')
        .ok_or_else(|| GrantError::MissingBracket(text.to_string()))?;
    let port = match after {
        "" => None,
        p => Some(
            p.strip_prefix(':')
                .ok_or_else(|| GrantError::AfterBracket(text.to_string()))?,
        ),
    };
    Ok((ip, port))
}

/// One preopened directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirGrant {
    /// Absolute host path (relative paths in the manifest are resolved against the
    /// manifest's folder).
    pub host: PathBuf,
    /// Absolute path the guest sees.
    pub guest: String,
    /// Whether the guest may write (`writable = true`); read-only otherwise.
    pub writable: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_grants_parse_strictly() {
        assert!(HostGrant::parse("*.example.com").is_err());
        assert!(HostGrant::parse("example.com:0").is_err());
        assert!(HostGrant::parse("example.com:http").is_err());
        assert_eq!(HostGrant::parse("Example.COM:8443").unwrap().host, "example.com");
        assert_eq!(HostGrant::parse("::1").unwrap().ip, Some("::1".parse().unwrap()));
    }
}
