//! OCI references as the operator writes them: `oci://host[:port]/repo[:tag]`,
//! `oci://host[:port]/repo@sha256:<hex>` or both (`repo:tag@sha256:…`, where the
//! digest wins). No default registry: the host is always named.

use std::fmt;
use std::net::IpAddr;

/// The scheme every reference starts with.
const SCHEME: &str = "oci://";

/// A parsed reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// Host name or IP literal (IPv6 without brackets).
    pub host: String,
    /// The port, when written.
    pub port: Option<u16>,
    /// Repository path, `[a-z0-9]+([._-][a-z0-9]+)*` segments joined by `/`.
    pub repository: String,
    /// The tag, when written (`latest` when neither tag nor digest is).
    pub tag: Option<String>,
    /// `sha256:<64 hex>`, when written.
    pub digest: Option<String>,
}

/// Why a reference does not parse; holds what was written and the rule broken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceError {
    /// The text given.
    pub text: String,
    /// What is wrong with it.
    pub why: &'static str,
}

impl fmt::Display for ReferenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not an OCI reference ({}): expected oci://host[:port]/repo:tag or oci://host[:port]/repo@sha256:<hex>",
            self.text, self.why
        )
    }
}

impl std::error::Error for ReferenceError {}

impl Reference {
    /// Parses `oci://…`.
    pub fn parse(text: &str) -> Result<Reference, ReferenceError> {
        let bad = |why| ReferenceError {
            text: text.to_string(),
            why,
        };
        let rest = text
            .strip_prefix(SCHEME)
            .ok_or(bad("it must start with oci://"))?;
        let (authority, path) = rest.split_once('/').ok_or(bad("no repository after the host"))?;
        let (host, port) = split_authority(authority).ok_or(bad("the host or port is malformed"))?;
        let (path, digest) = match path.split_once('@') {
            Some((p, d)) => (p, Some(d)),
            None => (path, None),
        };
        if let Some(d) = digest {
            let hex = d
                .strip_prefix("sha256:")
                .ok_or(bad("the digest must be sha256:<hex>"))?;
            if hex.len() != 64
                || !hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            {
                return Err(bad("the digest must be sha256: and 64 lowercase hex digits"));
            }
        }
        // A ':' after the last '/' starts the tag.
        let last = path.rfind('/').map_or(0, |i| i + 1);
        let (repository, tag) = match path[last..].find(':') {
            Some(i) => (&path[..last + i], Some(&path[last + i + 1..])),
            None => (path, None),
        };
        if !repository.split('/').all(valid_segment) {
            return Err(bad(
                "repository segments are lowercase letters and digits joined by . _ -",
            ));
        }
        if let Some(t) = tag
            && !valid_tag(t)
        {
            return Err(bad("a tag is 1-128 of [A-Za-z0-9_.-], not starting with . or -"));
        }
        Ok(Reference {
            host: host.to_string(),
            port,
            repository: repository.to_string(),
            tag: tag.map(str::to_string),
            digest: digest.map(str::to_string),
        })
    }

    /// `host[:port]` as the registry is named in `Host` and in Docker's config.
    pub fn registry(&self) -> String {
        let host = match self.host.contains(':') {
            true => format!("[{}]", self.host),
            false => self.host.clone(),
        };
        match self.port {
            Some(p) => format!("{host}:{p}"),
            None => host,
        }
    }

    /// What a manifest is fetched by: the digest if written, else the tag (`latest`).
    pub fn target(&self) -> &str {
        self.digest.as_deref().or(self.tag.as_deref()).unwrap_or("latest")
    }

    /// Whether the registry is on this machine (plain HTTP is allowed there).
    pub fn is_loopback(&self) -> bool {
        self.host == "localhost" || self.host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }

    /// The last repository segment: the default plugin name.
    pub fn default_name(&self) -> &str {
        self.repository.rsplit('/').next().unwrap_or(&self.repository)
    }

    /// The same repository at `digest`, without the tag.
    pub fn at_digest(&self, digest: &str) -> Reference {
        Reference {
            tag: None,
            digest: Some(digest.to_string()),
            ..self.clone()
        }
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.registry(), self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`.
fn split_authority(authority: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = match authority.strip_prefix('[') {
        Some(rest) => {
            let (host, after) = rest.split_once(']')?;
            host.parse::<std::net::Ipv6Addr>().ok()?;
            (host, after.strip_prefix(':'))
        }
        None => match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        },
    };
    let host_ok = !host.is_empty()
        && (host.contains(':')
            || host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-'));
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok().filter(|&p| p > 0)?),
        None => None,
    };
    host_ok.then_some((host, port))
}

fn valid_segment(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && alnum(&b[0])
        && alnum(&b[b.len() - 1])
        && b.iter().all(|c| alnum(c) || matches!(c, b'.' | b'_' | b'-'))
}

fn valid_tag(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= 128
        && !t.starts_with(['.', '-'])
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_digests_ports_and_nested_repositories_parse() {
        let r = Reference::parse("oci://127.0.0.1:5000/plugins/text:1.0").unwrap();
        assert_eq!((r.host.as_str(), r.port), ("127.0.0.1", Some(5000)));
        assert_eq!(
            (r.repository.as_str(), r.tag.as_deref()),
            ("plugins/text", Some("1.0"))
        );
        assert_eq!((r.target(), r.default_name()), ("1.0", "text"));
        assert!(r.is_loopback());
        assert_eq!(r.to_string(), "oci://127.0.0.1:5000/plugins/text:1.0");

        let d = format!("sha256:{}", "a".repeat(64));
        let r = Reference::parse(&format!("oci://ghcr.io/org/calc:v2@{d}")).unwrap();
        assert_eq!((r.target(), r.port, r.is_loopback()), (d.as_str(), None, false));
        assert_eq!(r.registry(), "ghcr.io");
        let r = Reference::parse("oci://[::1]:5000/text").unwrap();
        assert_eq!((r.registry().as_str(), r.target()), ("[::1]:5000", "latest"));
        assert!(r.is_loopback());
        assert_eq!(r.at_digest(&d).to_string(), format!("oci://[::1]:5000/text@{d}"));
    }

    #[test]
    fn malformed_references_say_why() {
        for (text, why) in [
            ("docker://x/y", "oci://"),
            ("oci://host", "no repository"),
            ("oci://host:99999/x", "port"),
            ("oci://host/Upper", "lowercase"),
            ("oci://host/x:-bad", "tag"),
            ("oci://host/x@sha256:abc", "64"),
            ("oci://host/x@md5:abc", "sha256"),
        ] {
            let e = Reference::parse(text).unwrap_err();
            assert!(e.to_string().contains(why), "{text}: {e}");
        }
    }
}
