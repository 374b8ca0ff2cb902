//! `GET /`: the hub's own chat page, one self-contained HTML file compiled into the
//! binary (no build step, no CDN). It speaks the UI message stream itself with
//! `fetch` and a stream reader; see `page.html`.

use crate::surfaces::respond::{self, Resp};

/// The page, embedded at compile time.
pub(crate) const PAGE: &str = include_str!("page.html");

/// The page response (revalidated on every load, so a new binary's page is seen).
pub(crate) fn page() -> Resp {
    respond::embedded_page(PAGE, "no-cache")
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
