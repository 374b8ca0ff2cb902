//! CORS for what browser-based MCP clients (the Inspector's direct mode, web
//! connectors, pages using an MCP SDK) call from their own origin: `/mcp` itself
//! and the OAuth endpoints (the discovery documents, registration, the token
//! endpoint and revocation) answer a preflight and carry
//! `Access-Control-Allow-Origin: *`, exposing what those clients read
//! (`Mcp-Session-Id`, `WWW-Authenticate`, `Retry-After`). The sign-in and consent
//! page (`/oauth/authorize`) is not among them: it is a navigation, never a
//! cross-origin fetch, and its form is bound to a same-site cookie, so it stays
//! same-origin.
//!
//! Which origins may call at all is the guard's (`guard`: loopback origins, the
//! hub's own, `[server] allowed_origins`; any other gets 403 before a route runs,
//! against DNS rebinding). `*` rather than echoing the caller's origin: none of
//! these endpoints reads a cookie or any other ambient credential (a bearer token
//! is set by the page's script; what an OAuth request proves is in its body), and a
//! browser never sends credentials on a request answered with `*` nor lets the page
//! read the answer of one it sent with them. Echoing origins would only matter with
//! `Access-Control-Allow-Credentials`, which the hub never sends.

use super::respond::{self, Resp};
use http::{HeaderValue, header};

/// The request headers a cross-origin caller may send: its own `Content-Type`
/// (JSON), `Accept` (JSON and SSE on `/mcp`), the MCP SDKs' `MCP-Protocol-Version`,
/// `Mcp-Session-Id` and `Last-Event-ID` (resuming a stream), and `Authorization`
/// (set by the page's script, never ambient).
const ALLOWED_HEADERS: &str =
    "authorization, content-type, accept, mcp-protocol-version, mcp-session-id, last-event-id";

/// The answer headers such a caller's script may read besides the safelisted ones.
const EXPOSED_HEADERS: &str = "mcp-session-id, mcp-protocol-version, www-authenticate, retry-after";

/// How long a browser may reuse a preflight's answer, in seconds.
const MAX_AGE: &str = "600";

/// `resp` readable from any origin the guard let in (the answer to an actual request).
pub(crate) fn any_origin(mut resp: Resp) -> Resp {
    let headers = resp.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    // The session a client must send back, the authorization server to find on a
    // 401, and how long to wait after a 429.
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSED_HEADERS),
    );
    resp
}

/// The answer to a preflight (`OPTIONS`) for an endpoint taking `method` (one, or
/// a comma-separated list).
pub(crate) fn preflight(method: &'static str) -> Resp {
    let mut resp = any_origin(respond::no_content());
    let headers = resp.headers_mut();
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(method),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(ALLOWED_HEADERS),
    );
    headers.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static(MAX_AGE));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::StatusCode;

    #[test]
    fn a_preflight_allows_any_origin_without_credentials() {
        let resp = preflight("POST");
        assert_eq!(resp.status(), StatusCode::NO_CONTENT);
        let h = resp.headers();
        assert_eq!(h[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
        assert_eq!(h[header::ACCESS_CONTROL_ALLOW_METHODS], "POST");
        assert_eq!(
            h[header::ACCESS_CONTROL_ALLOW_HEADERS],
            "authorization, content-type, accept, mcp-protocol-version, mcp-session-id, last-event-id"
        );
        assert!(
            h[header::ACCESS_CONTROL_EXPOSE_HEADERS]
                .to_str()
                .unwrap()
                .contains("mcp-session-id")
        );
        assert_eq!(h[header::ACCESS_CONTROL_MAX_AGE], "600");
        assert!(h.get(header::ACCESS_CONTROL_ALLOW_CREDENTIALS).is_none());
    }
}
