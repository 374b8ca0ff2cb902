//! `GET /`: the hub's own chat page, one self-contained HTML file compiled into the
//! binary (no build step, no CDN). It speaks the UI message stream itself with
//! `fetch` and a stream reader; see `page.html`.

use crate::surfaces::body::Body;
use crate::surfaces::respond::Resp;
use http::{HeaderValue, Response, header};

/// The page, embedded at compile time.
pub(crate) const PAGE: &str = include_str!("page.html");

/// The page response. The CSP allows only the page's own inline script and style
/// and requests to the hub itself.
pub(crate) fn page() -> Resp {
    let mut resp = Response::new(Body::full(PAGE));
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ),
    );
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_is_self_contained() {
        assert!(PAGE.starts_with("<!doctype html>"));
        for needle in [
            "/api/chat",
            "/api/sessions",
            "/v1/models",
            "getReader",
            "tool-output-available",
            "abort",
        ] {
            assert!(PAGE.contains(needle), "{needle}");
        }
        // No external resources.
        assert!(!PAGE.contains("src=\"http"), "external script");
        assert!(!PAGE.contains("href=\"http"), "external stylesheet");
    }
}
