//! Redirect URIs: which a client may register, and whether the one an
//! authorization request names is registered. Matching is exact string
//! comparison (OAuth 2.1 §2.3.1), with the one exception RFC 8252 §7.3 makes for
//! native apps: an `http` loopback URI matches whatever port the app listens on.
//! A URI that matches nothing is never redirected to (no open redirect).

/// Why a redirect URI cannot be registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadRedirect {
    /// The URI.
    pub uri: String,
    /// Why.
    pub why: &'static str,
}

impl std::fmt::Display for BadRedirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "redirect URI {:?}: {}", self.uri, self.why)
    }
}

impl std::error::Error for BadRedirect {}

/// A URI split into the parts the rules look at.
#[derive(Debug, PartialEq, Eq)]
struct Parts<'u> {
    scheme: &'u str,
    host: &'u str,
    port: Option<&'u str>,
    /// Path and query.
    rest: &'u str,
}

fn split(uri: &str) -> Option<Parts<'_>> {
    let (scheme, after) = uri.split_once("://")?;
    let scheme_ok = scheme
        .bytes()
        .enumerate()
        .all(|(i, c)| c.is_ascii_lowercase() || (i > 0 && (c.is_ascii_digit() || b"+.-".contains(&c))));
    if scheme.is_empty() || !scheme_ok {
        return None;
    }
    let end = after.find(['/', '?']).unwrap_or(after.len());
    let (authority, rest) = after.split_at(end);
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (inner, tail) = v6.split_once(']')?;
        let host = &authority[..inner.len() + 2];
        match tail {
            "" => (host, None),
            t => (host, Some(t.strip_prefix(':')?)),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if port.is_some_and(|p| p.is_empty() || !p.bytes().all(|c| c.is_ascii_digit())) {
        return None;
    }
    Some(Parts {
        scheme,
        host,
        port,
        rest,
    })
}

fn is_loopback(host: &str) -> bool {
    matches!(host, "127.0.0.1" | "[::1]" | "localhost")
}

/// Whether `uri` may be registered: absolute, no fragment, no user info; `https`,
/// `http` only on loopback (RFC 8252 §7.3), or an app's private-use scheme (§7.1),
/// never a scheme a browser would run or read locally.
pub(crate) fn check_registrable(uri: &str) -> Result<(), BadRedirect> {
    let bad = |why| {
        Err(BadRedirect {
            uri: uri.to_string(),
            why,
        })
    };
    if uri.contains('#') {
        return bad("must not have a fragment");
    }
    if uri.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad("must not contain spaces or control characters");
    }
    let Some(parts) = split(uri) else {
        return bad("must be an absolute URI like https://host/path");
    };
    if parts.host.contains('@') {
        return bad("must not carry user info");
    }
    match parts.scheme {
        "https" if !parts.host.is_empty() => Ok(()),
        "http" if is_loopback(parts.host) => Ok(()),
        "http" => bad("http is allowed only on loopback (127.0.0.1, [::1], localhost)"),
        "https" => bad("needs a host"),
        "javascript" | "data" | "file" | "vbscript" | "blob" | "about" => bad("this scheme is not allowed"),
        _ => Ok(()),
    }
}

/// The registered URI `presented` matches, if any: the same string, or a
/// loopback `http` URI that differs only in its port.
pub(crate) fn find<'r>(registered: &'r [String], presented: &str) -> Option<&'r str> {
    if let Some(exact) = registered.iter().find(|r| *r == presented) {
        return Some(exact);
    }
    let p = split(presented).filter(|p| p.scheme == "http" && is_loopback(p.host))?;
    registered
        .iter()
        .map(String::as_str)
        .find(|r| split(r).is_some_and(|r| r.scheme == "http" && r.host == p.host && r.rest == p.rest))
}

/// The host a person sees on the consent page (`claude.ai`, `127.0.0.1`, or the
/// scheme of an app's URI).
pub(crate) fn shown_host(uri: &str) -> String {
    match split(uri) {
        Some(p) if p.scheme == "http" || p.scheme == "https" => p.host.to_string(),
        Some(p) => format!("{}:// (an app on this device)", p.scheme),
        None => uri.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registrable_uris() {
        for ok in [
            "https://claude.ai/api/mcp/auth_callback",
            "http://127.0.0.1:33418/",
            "http://localhost/callback",
            "http://[::1]:8080/cb?x=1",
            "cursor://anysphere.cursor-retrieval/oauth/callback",
            "com.example.app://cb",
        ] {
            assert_eq!(check_registrable(ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("http://evil.example/cb", "loopback"),
            ("https://claude.ai/cb#frag", "fragment"),
            ("javascript://alert(1)", "scheme"),
            ("/relative", "absolute"),
            ("https://user@claude.ai/cb", "user info"),
            ("https://:443/cb", "host"),
            ("http://127.0.0.1:/cb", "absolute"),
            ("HTTPS://claude.ai/cb", "absolute"),
            ("https://claude.ai/c b", "spaces"),
        ] {
            let err = check_registrable(bad).unwrap_err();
            assert!(err.why.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn matching_is_exact_except_loopback_ports() {
        let registered = vec![
            "https://claude.ai/api/mcp/auth_callback".to_string(),
            "http://127.0.0.1:1234/callback".to_string(),
        ];
        let find = |p: &str| super::find(&registered, p);
        assert!(find("https://claude.ai/api/mcp/auth_callback").is_some());
        assert!(find("https://claude.ai/api/mcp/auth_callback/").is_none());
        assert!(find("https://claude.ai/api/mcp/auth_callback?x=1").is_none());
        assert!(find("https://CLAUDE.ai/api/mcp/auth_callback").is_none());
        assert!(find("https://claude.ai:443/api/mcp/auth_callback").is_none());
        assert_eq!(
            find("http://127.0.0.1:55555/callback"),
            Some("http://127.0.0.1:1234/callback")
        );
        assert!(find("http://127.0.0.1/callback").is_some());
        assert!(find("http://127.0.0.1:55555/other").is_none());
        assert!(find("http://localhost:55555/callback").is_none(), "another host");
        assert!(
            find("https://127.0.0.1:55555/callback").is_none(),
            "https is exact"
        );
        assert!(find("http://127.0.0.1:55555@evil.example/callback").is_none());
        assert!(find("").is_none());
    }

    #[test]
    fn the_consent_page_shows_the_host() {
        assert_eq!(shown_host("https://claude.ai/api/mcp/auth_callback"), "claude.ai");
        assert_eq!(shown_host("http://127.0.0.1:9/cb"), "127.0.0.1");
        assert!(shown_host("cursor://x/y").starts_with("cursor://"));
    }
}
