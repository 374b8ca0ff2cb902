//! `GET /console`: the operator console, one self-contained HTML file compiled into
//! the binary (no build step, no CDN, no framework). It is behind the same bearer
//! check as the API, and everything it shows comes from the authenticated API with
//! the page's token: plugins (`/api/plugins`), operations with their schemas and a
//! form to try each (`/api/hub/list`, `/api/hub/schema`, `/api/hub/call`), recent
//! calls (`/api/calls`), pending approvals (`/api/approvals`) and the figures of
//! `/metrics`. Plugin-, model- and client-provided text is only ever set as text.

use crate::surfaces::body::Body;
use crate::surfaces::respond::Resp;
use http::{HeaderValue, Response, header};

/// The page, embedded at compile time.
pub(crate) const PAGE: &str = include_str!("page.html");

/// The same policy as the chat page: only the page's own inline script and style,
/// and requests to the hub itself.
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The page response. `no-store`: it is served only to authenticated callers, so
/// no cache keeps it for the next one.
pub(crate) fn page() -> Resp {
    let mut resp = Response::new(Body::full(PAGE));
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_is_self_contained_and_uses_the_api() {
        assert!(PAGE.starts_with("<!doctype html>"));
        for needle in [
            "/api/plugins",
            "/api/hub/list",
            "/api/hub/schema",
            "/api/hub/call",
            "/api/calls?limit=",
            "/api/approvals",
            "/metrics",
            "wasmhub_calls_total",
            "wasmhub_call_duration_seconds_bucket",
            "this token is not an operator",
            "textContent",
        ] {
            assert!(PAGE.contains(needle), "{needle}");
        }
        assert!(!PAGE.contains("src=\"http"), "external script");
        assert!(!PAGE.contains("href=\"http"), "external stylesheet");
        // Text from plugins and clients is never parsed as HTML.
        for sink in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
        ] {
            assert!(!PAGE.contains(sink), "{sink}");
        }
    }

    #[test]
    fn the_page_carries_the_security_headers() {
        let resp = page();
        let h = resp.headers();
        assert_eq!(h[header::CONTENT_TYPE], "text/html; charset=utf-8");
        assert_eq!(h[header::CACHE_CONTROL], "no-store");
        assert_eq!(h[header::CONTENT_SECURITY_POLICY], CSP);
        assert_eq!(h["x-content-type-options"], "nosniff");
        // The same policy as the chat page.
        let chat = crate::surfaces::chat::page::page();
        assert_eq!(
            chat.headers()[header::CONTENT_SECURITY_POLICY],
            h[header::CONTENT_SECURITY_POLICY]
        );
    }
}
