//! The request headers the MCP rules look at ([`McpHeaders`]): the session id, the
//! protocol version, the routing headers and what `Accept` allows. Read by the
//! HTTP endpoint (`super::http`) and the 2025-11-25 handshake (`super::handshake`).

use super::jsonrpc::Request;
use http::{HeaderMap, header};

pub(super) const SESSION_HEADER: &str = "mcp-session-id";
pub(super) const VERSION_HEADER: &str = "mcp-protocol-version";
pub(super) const METHOD_HEADER: &str = "mcp-method";
pub(super) const NAME_HEADER: &str = "mcp-name";

/// The request headers the MCP rules look at, trimmed.
pub(super) struct McpHeaders<'h> {
    pub(super) session_id: Option<&'h str>,
    pub(super) version: Option<&'h str>,
    pub(super) method: Option<&'h str>,
    pub(super) name: Option<&'h str>,
    /// A routing header sent more than once.
    pub(super) duplicated: Option<&'static str>,
    pub(super) accepts_json: bool,
    pub(super) accepts_sse: bool,
}

impl<'h> McpHeaders<'h> {
    pub(super) fn read(h: &'h HeaderMap) -> McpHeaders<'h> {
        // One pass over the request's few headers: a lookup by a `&str` name
        // parses and hashes the name each time, and there were seven.
        // The session id, then the three routing headers (a duplicate is named).
        const READ: [&str; 4] = [SESSION_HEADER, VERSION_HEADER, METHOD_HEADER, NAME_HEADER];
        let mut values: [Option<&'h str>; 4] = [None; 4];
        let mut counts = [0usize; 4];
        for (name, value) in h {
            let Some(i) = READ.iter().position(|n| name.as_str() == *n) else {
                continue;
            };
            counts[i] += 1;
            if counts[i] == 1 {
                values[i] = value.to_str().ok().map(str::trim);
            }
        }
        let duplicated = READ[1..]
            .iter()
            .zip(&counts[1..])
            .find(|(_, n)| **n > 1)
            .map(|(name, _)| *name);
        let (accepts_json, accepts_sse) = accepts(h);
        let [session_id, version, method, name] = values;
        McpHeaders {
            session_id,
            version,
            method,
            name,
            duplicated,
            accepts_json,
            accepts_sse,
        }
    }

    /// SSE when the client asked for progress or accepts nothing else.
    pub(super) fn wants_sse<'a>(&self, mut requests: impl Iterator<Item = &'a Request>) -> bool {
        self.accepts_sse && (!self.accepts_json || requests.any(|r| r.progress_token().is_some()))
    }
}

/// Which of JSON and SSE the `Accept` header allows; both when it is absent.
fn accepts(h: &HeaderMap) -> (bool, bool) {
    let mut values = h
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .peekable();
    if values.peek().is_none() {
        return (true, true);
    }
    let (mut json, mut sse) = (false, false);
    for media in values.flat_map(|v| v.split(',')) {
        let media = media.split(';').next().unwrap_or("").trim();
        let is = |name: &str| media.eq_ignore_ascii_case(name);
        if is("application/json") || is("application/*") {
            json = true;
        } else if is("text/event-stream") || is("text/*") {
            sse = true;
        } else if media == "*/*" {
            (json, sse) = (true, true);
        }
    }
    (json, sse)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn accept_header_decides_json_and_sse() {
        assert_eq!(accepts(&headers(&[])), (true, true));
        assert_eq!(
            accepts(&headers(&[("accept", "application/json, text/event-stream")])),
            (true, true)
        );
        assert_eq!(
            accepts(&headers(&[("accept", "application/json")])),
            (true, false)
        );
        assert_eq!(
            accepts(&headers(&[("accept", "text/event-stream;q=1")])),
            (false, true)
        );
        assert_eq!(accepts(&headers(&[("accept", "*/*")])), (true, true));
        assert_eq!(accepts(&headers(&[("accept", "text/html")])), (false, false));
        let map = headers(&[("mcp-method", "a"), ("mcp-method", "b"), ("mcp-name", " x ")]);
        let h = McpHeaders::read(&map);
        assert_eq!(h.duplicated, Some(METHOD_HEADER));
        assert_eq!(h.name, Some("x"));
    }

    #[test]
    fn each_header_keeps_its_first_value_and_the_first_routing_duplicate_is_named() {
        let mut map = headers(&[
            ("mcp-name", "n1"),
            ("mcp-session-id", " s1 "),
            ("mcp-protocol-version", "2025-11-25"),
            ("mcp-name", "n2"),
            ("mcp-protocol-version", "2026-07-28"),
            ("content-type", "application/json"),
        ]);
        map.append("mcp-method", HeaderValue::from_bytes(b"\xff").unwrap());
        let h = McpHeaders::read(&map);
        assert_eq!(
            (h.session_id, h.version, h.name, h.method),
            (Some("s1"), Some("2025-11-25"), Some("n1"), None),
            "the first of each, trimmed; a value that is not text reads as absent"
        );
        assert_eq!(
            h.duplicated,
            Some(VERSION_HEADER),
            "version is checked before name"
        );
        let single = headers(&[("mcp-method", "tools/call"), ("MCP-Name", "hub_call")]);
        let h = McpHeaders::read(&single);
        assert_eq!(
            (h.method, h.name, h.duplicated, h.session_id),
            (Some("tools/call"), Some("hub_call"), None, None)
        );
    }
}
