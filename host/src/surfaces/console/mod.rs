//! `GET /console`: the operator console, one self-contained HTML page compiled into
//! the binary (no build step, no CDN, no framework), kept in `page/` as its markup,
//! its stylesheet and its script in five parts, joined here in a fixed order. It is behind the same bearer
//! check as the API, and everything it shows comes from the authenticated API with
//! the page's token: plugins (`/api/plugins`), MCP servers (`/api/mcp-servers`), operations with their schemas and a
//! form to try each (`/api/hub/list`, `/api/hub/schema`, `/api/hub/call`), recent
//! calls (`/api/calls`), chat sessions (`/api/sessions`), accounting records
//! (`/api/accounting`), each with its principal, pending approvals
//! (`/api/approvals`) and the figures of `/metrics`, and creates OAuth sign-in
//! codes (`/api/oauth/signin-codes`, operators), and shows each plugin's declared
//! secrets and configuration with a form to set or remove a secret
//! (`PUT`/`DELETE /api/plugins/{plugin}/secrets/{name}`, operators). Plugin-, model- and
//! client-provided text is only ever set as text.

use crate::surfaces::respond::{self, Resp};

/// The page, embedded at compile time: the script's parts share one scope, in this
/// order (each part's first lines say what it owns).
pub(crate) const PAGE: &str = concat!(
    include_str!("page/head.html"),
    "<style>\n",
    include_str!("page/style.css"),
    "</style>\n</head>\n",
    include_str!("page/body.html"),
    "<script>\n",
    include_str!("page/base.js"),
    include_str!("page/inventory.js"),
    include_str!("page/activity.js"),
    include_str!("page/metrics.js"),
    include_str!("page/main.js"),
    "</script>\n</body>\n</html>\n",
);

/// The page response. `no-store`: it is served only to authenticated callers, so
/// no cache keeps it for the next one.
pub(crate) fn page() -> Resp {
    respond::embedded_page(PAGE, "no-store")
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header;

    #[test]
    fn the_page_is_self_contained_and_uses_the_api() {
        assert!(PAGE.starts_with("<!doctype html>"));
        for needle in [
            "/api/plugins",
            "/api/mcp-servers",
            "/api/hub/list",
            "/api/hub/schema",
            "/api/hub/call",
            "/api/calls?limit=",
            "/api/approvals",
            "/api/oauth/signin-codes",
            "/api/sessions",
            "/api/accounting?",
            "/secrets/",
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
        let csp = h[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(
            csp.starts_with("default-src 'none'; script-src 'unsafe-inline';"),
            "{csp}"
        );
        assert!(
            csp.contains("connect-src 'self'") && csp.contains("frame-ancestors 'none'"),
            "{csp}"
        );
        assert_eq!(h["x-content-type-options"], "nosniff");
        assert_eq!(h[header::REFERRER_POLICY], "no-referrer");
        // The same policy as the chat page.
        let chat = crate::surfaces::chat::page::page();
        assert_eq!(
            chat.headers()[header::CONTENT_SECURITY_POLICY],
            h[header::CONTENT_SECURITY_POLICY]
        );
    }
}
