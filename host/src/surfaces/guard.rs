//! Request checks that come before any surface: `Host` and `Origin` validation
//! against DNS rebinding (authentication is [`super::auth`]'s).
//!
//! A browser page on `evil.example` that resolves to 127.0.0.1 can reach the hub;
//! its requests carry `Host: evil.example` and `Origin: http://evil.example`. We
//! accept only loopback host names, the listen address and configured extras.

use super::App;
use super::respond::{self, Resp};
use http::{Request, StatusCode, header};

/// Rejects requests whose `Host` or `Origin` is not one of ours with 403.
pub(crate) fn check_host_and_origin<B>(app: &App, req: &Request<B>) -> Result<(), Resp> {
    if let Some(host) = req.headers().get(header::HOST) {
        let host = host.to_str().unwrap_or("");
        if !host_allowed(app, host) {
            return Err(respond::error(
                StatusCode::FORBIDDEN,
                "forbidden_host",
                format!(
                    "Host {host:?} is not accepted by this hub (DNS rebinding protection); add it to [server] allowed_hosts"
                ),
            ));
        }
    }
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !origin_allowed(app, origin) {
            return Err(respond::error(
                StatusCode::FORBIDDEN,
                "forbidden_origin",
                format!("Origin {origin:?} is not accepted by this hub; add it to [server] allowed_origins"),
            ));
        }
    }
    Ok(())
}

/// `host` is `name` or `name:port`, with IPv6 in brackets.
fn split_host(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    host.rsplit_once(':').map(|(name, _)| name).unwrap_or(host)
}

fn is_local_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name == "localhost" || name == "127.0.0.1" || name == "::1" || name.ends_with(".localhost")
}

fn host_allowed(app: &App, host: &str) -> bool {
    let name = split_host(host);
    if is_local_name(name) {
        return true;
    }
    // The hub's external URL (behind a TLS front, the Host clients send).
    if let Some(public) = app.config.oauth.enabled().then(|| app.config.oauth.base()) {
        let authority = public.split_once("://").map_or(public, |(_, rest)| rest);
        if authority.eq_ignore_ascii_case(host) || split_host(authority).eq_ignore_ascii_case(name) {
            return true;
        }
    }
    let listen = app.config.listen.ip();
    if !listen.is_unspecified() && name == listen.to_string() {
        return true;
    }
    app.config
        .server
        .allowed_hosts
        .iter()
        .any(|h| h.eq_ignore_ascii_case(host) || h.eq_ignore_ascii_case(name))
}

fn origin_allowed(app: &App, origin: &str) -> bool {
    if origin == "null" {
        return false;
    }
    if app
        .config
        .server
        .allowed_origins
        .iter()
        .any(|o| o.eq_ignore_ascii_case(origin))
    {
        return true;
    }
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    host_allowed(app, rest.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_host_names() {
        assert_eq!(split_host("localhost:8787"), "localhost");
        assert_eq!(split_host("[::1]:8787"), "::1");
        assert_eq!(split_host("127.0.0.1"), "127.0.0.1");
        assert!(is_local_name("LOCALHOST"));
        assert!(!is_local_name("evil.example"));
    }
}
