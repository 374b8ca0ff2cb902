//! CORS for the OAuth endpoints browser-based MCP clients (the Inspector, web
//! connectors) call from their own origin: the discovery documents, registration,
//! the token endpoint and revocation answer a preflight and carry
//! `Access-Control-Allow-Origin: *`. The sign-in and consent page
//! (`/oauth/authorize`) is not among them: it is a navigation, never a cross-origin
//! fetch, and its form is bound to a same-site cookie, so it stays same-origin.
//!
//! `*` rather than echoing the caller's origin: none of these endpoints reads a
//! cookie or any other ambient credential (what a request proves is in its body:
//! the PKCE verifier, the refresh token, the token to revoke), and a browser never
//! sends credentials on a request answered with `*` nor lets the page read the
//! answer of one it sent with them. Echoing origins would only matter with
//! `Access-Control-Allow-Credentials`, which the hub never sends.

use super::super::respond::{self, Resp};
use http::{HeaderValue, header};

/// The request headers a cross-origin caller may send: its own `Content-Type`
/// (JSON registration), the MCP SDKs' `MCP-Protocol-Version` on discovery, and
/// `Authorization` (set by the page's script, never ambient).
const ALLOWED_HEADERS: &str = "authorization, content-type, mcp-protocol-version";

/// How long a browser may reuse a preflight's answer, in seconds.
const MAX_AGE: &str = "600";

/// `resp` readable from any origin (the answer to an actual request).
pub(super) fn any_origin(mut resp: Resp) -> Resp {
    let headers = resp.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    // A client told to slow down (429) can see for how long.
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("retry-after"),
    );
    resp
}

/// The answer to a preflight (`OPTIONS`) for an endpoint taking `method`.
pub(super) fn preflight(method: &'static str) -> Resp {
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
            "authorization, content-type, mcp-protocol-version"
        );
        assert_eq!(h[header::ACCESS_CONTROL_MAX_AGE], "600");
        assert!(h.get(header::ACCESS_CONTROL_ALLOW_CREDENTIALS).is_none());
    }
}
