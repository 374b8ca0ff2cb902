//! The `fetch` plugin: HTTP GET of a URL through wasi:http, so a model can read a
//! page or an API response. Which hosts are reachable is decided by the host's
//! enforcement of this plugin's capability manifest (`fetch.toml`), not here: a
//! host outside the allowlist fails with a `forbidden` error before any DNS lookup.
//!
//! Everything but the network round trip (URL checks, redirect resolution, header
//! selection, body truncation, error mapping) is plain code, unit-tested natively;
//! the round trip itself lives in [`net`] and only exists in the wasm build.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wasmhub_guest::Error;

#[cfg(target_arch = "wasm32")]
mod net;

/// Longest URL accepted, in bytes.
pub const MAX_URL_BYTES: usize = 2048;
/// Default body bytes returned.
pub const DEFAULT_MAX_BYTES: u32 = 64 * 1024;
/// Most body bytes one call may ask for (1 MiB).
pub const MAX_BYTES: u32 = 1 << 20;
/// Redirects followed before giving up.
pub const MAX_REDIRECTS: usize = 5;
/// Response headers always returned when present.
pub const DEFAULT_HEADERS: &[&str] = &[
    "content-type",
    "content-length",
    "last-modified",
    "etag",
    "location",
];
/// Sent with every request: some sites (Wikipedia among them) refuse anonymous clients.
pub const USER_AGENT: &str = "wasmhub-fetch/0.1 (wasmhub plugin)";

/// What to fetch.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetInput {
    /// An absolute `http://` or `https://` URL. Only hosts the operator allowed in
    /// this plugin's manifest are reachable (by default `en.wikipedia.org`).
    #[schemars(length(min = 1, max = 2048))]
    pub url: String,
    /// Return at most this many bytes of the body (default 65536, at most 1048576);
    /// `truncated` says whether there was more.
    #[schemars(range(min = 1, max = 1048576))]
    pub max_bytes: Option<u32>,
    /// Extra response headers to return, by name (case-insensitive). Always returned
    /// when present: content-type, content-length, last-modified, etag, location.
    #[schemars(length(max = 32))]
    pub headers: Option<Vec<String>>,
    /// Follow up to 5 redirects (default true). When false a 3xx is returned as is,
    /// with its `location` header.
    pub follow_redirects: Option<bool>,
}

/// The response.
#[derive(Debug, Serialize, JsonSchema, PartialEq)]
pub struct GetOutput {
    /// The HTTP status code.
    pub status: u16,
    /// The URL that answered (after redirects).
    pub url: String,
    /// The selected response headers, names lowercased; repeated headers joined by ", ".
    pub headers: BTreeMap<String, String>,
    /// The body as text (UTF-8, invalid bytes replaced by U+FFFD), at most
    /// `max_bytes` bytes, cut at a character boundary.
    pub body: String,
    /// Whether the body was longer than `max_bytes`.
    pub truncated: bool,
    /// How many body bytes were read (at most `max_bytes`).
    pub body_bytes: u64,
}

/// A validated request.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The URL, fragment removed.
    pub url: String,
    /// Body bytes to keep.
    pub max_bytes: usize,
    /// Lowercased header names to return.
    pub headers: Vec<String>,
    /// Whether to follow redirects.
    pub follow_redirects: bool,
}

/// The parts of an absolute http(s) URL this plugin needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// `http` or `https`.
    pub scheme: String,
    /// `host` or `host:port`, as written.
    pub authority: String,
    /// The host alone, lowercased.
    pub host: String,
    /// Path and query, starting with `/`.
    pub path_and_query: String,
}

/// Parses and checks an absolute http(s) URL (no credentials, a host present).
pub fn parse_url(url: &str) -> Result<Target, Error> {
    if url.len() > MAX_URL_BYTES {
        return Err(Error::invalid_input(format!(
            "url is longer than {MAX_URL_BYTES} bytes"
        )));
    }
    let url = url.split('#').next().unwrap_or_default();
    let uri: http::Uri = url
        .parse()
        .map_err(|e| Error::invalid_input(format!("invalid url `{url}`: {e}")))?;
    let scheme = match uri.scheme_str() {
        Some(s @ ("http" | "https")) => s.to_string(),
        Some(other) => {
            return Err(Error::invalid_input(format!(
                "only http and https URLs can be fetched, not `{other}:`"
            )));
        }
        None => {
            return Err(Error::invalid_input(format!(
                "url `{url}` is not absolute: write it as https://host/path"
            )));
        }
    };
    let authority = uri
        .authority()
        .ok_or_else(|| Error::invalid_input(format!("url `{url}` has no host")))?;
    if authority.as_str().contains('@') {
        return Err(Error::invalid_input(
            "URLs with credentials (user:password@) are not allowed",
        ));
    }
    if authority.host().is_empty() {
        return Err(Error::invalid_input(format!("url `{url}` has no host")));
    }
    Ok(Target {
        scheme,
        authority: authority.as_str().to_string(),
        host: authority.host().to_ascii_lowercase(),
        path_and_query: uri
            .path_and_query()
            .map_or("/".to_string(), |p| p.as_str().to_string()),
    })
}

impl Target {
    /// The URL back as text.
    pub fn url(&self) -> String {
        format!("{}://{}{}", self.scheme, self.authority, self.path_and_query)
    }
}

/// Checks the input and fills in defaults.
pub fn plan(input: &GetInput) -> Result<Plan, Error> {
    let target = parse_url(&input.url)?;
    let max_bytes = input.max_bytes.unwrap_or(DEFAULT_MAX_BYTES);
    if max_bytes == 0 || max_bytes > MAX_BYTES {
        return Err(Error::invalid_input(format!(
            "max_bytes must be between 1 and {MAX_BYTES}"
        )));
    }
    let mut headers: Vec<String> = DEFAULT_HEADERS.iter().map(|h| h.to_string()).collect();
    for h in input.headers.iter().flatten() {
        let h = h.trim().to_ascii_lowercase();
        if h.is_empty()
            || !h
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.!#$%&'*+^`|~".contains(&b))
        {
            return Err(Error::invalid_input(format!("`{h}` is not a valid header name")));
        }
        if !headers.contains(&h) {
            headers.push(h);
        }
    }
    Ok(Plan {
        url: target.url(),
        max_bytes: max_bytes as usize,
        headers,
        follow_redirects: input.follow_redirects.unwrap_or(true),
    })
}

/// Resolves a `Location` header against the URL that sent it.
pub fn resolve_location(base: &str, location: &str) -> Result<String, Error> {
    let base = parse_url(base)?;
    let location = location.trim();
    // `scheme:...` is absolute whatever the scheme; only http(s) may be followed.
    let scheme_end = location.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')));
    let has_scheme = scheme_end.is_some_and(|i| i > 0 && location[i..].starts_with(':'));
    let absolute = if has_scheme {
        location.to_string()
    } else if let Some(rest) = location.strip_prefix("//") {
        format!("{}://{rest}", base.scheme)
    } else if location.starts_with('/') {
        format!("{}://{}{location}", base.scheme, base.authority)
    } else {
        let path = base.path_and_query.split('?').next().unwrap_or("/");
        let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
        format!("{}://{}{dir}{location}", base.scheme, base.authority)
    };
    parse_url(&absolute)
        .map(|t| t.url())
        .map_err(|e| Error::failed(format!("bad redirect to `{location}`: {}", e.message())))
}

/// Keeps the requested headers; repeated ones are joined with ", ".
pub fn select_headers<'a>(
    wanted: &[String],
    headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers {
        let name = name.to_ascii_lowercase();
        if !wanted.contains(&name) {
            continue;
        }
        let value = String::from_utf8_lossy(value).into_owned();
        out.entry(name)
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert(value);
    }
    out
}

/// The body as text: a UTF-8 sequence cut by `max_bytes` is dropped rather than
/// shown as a replacement character.
pub fn body_text(bytes: &[u8], truncated: bool) -> String {
    if truncated && let Err(e) = std::str::from_utf8(bytes) {
        // An incomplete sequence at the very end is the cut, not bad data.
        if e.error_len().is_none() {
            return String::from_utf8_lossy(&bytes[..e.valid_up_to()]).into_owned();
        }
    }
    String::from_utf8_lossy(bytes).into_owned()
}

/// Fetches the URL with HTTP GET.
pub fn get(input: GetInput) -> Result<GetOutput, Error> {
    let plan = plan(&input)?;
    #[cfg(target_arch = "wasm32")]
    {
        net::fetch(plan)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        Err(Error::failed(format!(
            "cannot fetch {}: the network is only reachable from the wasm component",
            plan.url
        )))
    }
}

// `get` is hinted open_world, so neither the hub at load nor `cargo test` runs these
// examples (they would need the network); `cargo test` still decodes their inputs.
// They have no fixed output: pages change.
wasmhub_guest::export_plugin! {
    instructions: "Only hosts the operator allowed in this plugin's manifest are reachable (by default \
        en.wikipedia.org); a forbidden error means the host is not allowed, and retrying will not help. \
        For Wikipedia, add ?action=raw to an article URL to get its wikitext instead of HTML, or use \
        https://en.wikipedia.org/api/rest_v1/page/summary/TITLE for a short JSON summary. Bodies are cut \
        at max_bytes (default 65536): ask for less when the start is enough.",
    /// Fetch a web page or API response with HTTP GET and return its status, main headers and body text (truncated to max_bytes).
    /// Only hosts allowed by the operator are reachable; others fail with a forbidden error.
    #[hints(read_only, open_world)]
    #[example("The start of a Wikipedia article as wikitext",
        {"url": "https://en.wikipedia.org/wiki/WebAssembly?action=raw", "max_bytes": 2048})]
    #[example("A short JSON summary of an article, with an extra response header",
        {"url": "https://en.wikipedia.org/api/rest_v1/page/summary/WebAssembly", "headers": ["cache-control"]})]
    #[example("A redirect returned as is (status 301 and its location header)",
        {"url": "http://en.wikipedia.org/wiki/WebAssembly", "follow_redirects": false, "max_bytes": 1})]
    get => get,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(url: &str) -> GetInput {
        GetInput {
            url: url.into(),
            max_bytes: None,
            headers: None,
            follow_redirects: None,
        }
    }

    #[test]
    fn urls_are_checked() {
        let t = parse_url("https://en.wikipedia.org/wiki/Rust?action=raw#History").unwrap();
        assert_eq!(t.host, "en.wikipedia.org");
        assert_eq!(t.url(), "https://en.wikipedia.org/wiki/Rust?action=raw");
        assert_eq!(
            parse_url("http://EXAMPLE.org:8080").unwrap().url(),
            "http://EXAMPLE.org:8080/"
        );
        assert_eq!(parse_url("http://EXAMPLE.org:8080").unwrap().host, "example.org");
        for bad in [
            "ftp://x.org/",
            "/wiki/Rust",
            "en.wikipedia.org/wiki",
            "https://user:pw@x.org/",
            "https://",
            "not a url",
        ] {
            assert!(
                matches!(parse_url(bad), Err(Error::InvalidInput(_))),
                "{bad} should be rejected"
            );
        }
        assert!(parse_url(&format!("https://x.org/{}", "a".repeat(MAX_URL_BYTES))).is_err());
    }

    #[test]
    fn plan_fills_defaults_and_checks_limits() {
        let p = plan(&input("https://en.wikipedia.org/wiki/Rust")).unwrap();
        assert_eq!(p.max_bytes, DEFAULT_MAX_BYTES as usize);
        assert!(p.follow_redirects);
        assert_eq!(p.headers.len(), DEFAULT_HEADERS.len());
        let mut i = input("https://x.org");
        i.headers = Some(vec!["X-Request-Id".into(), "content-type".into()]);
        i.max_bytes = Some(10);
        i.follow_redirects = Some(false);
        let p = plan(&i).unwrap();
        assert_eq!(p.headers.last().unwrap(), "x-request-id");
        assert_eq!(p.headers.len(), DEFAULT_HEADERS.len() + 1);
        assert!(!p.follow_redirects);
        i.max_bytes = Some(MAX_BYTES + 1);
        assert!(plan(&i).is_err());
        i.max_bytes = None;
        i.headers = Some(vec!["bad header".into()]);
        assert!(plan(&i).is_err());
    }

    #[test]
    fn redirects_resolve_against_the_base() {
        let base = "https://en.wikipedia.org/wiki/Rust_(language)?x=1";
        assert_eq!(
            resolve_location(base, "/wiki/Rust").unwrap(),
            "https://en.wikipedia.org/wiki/Rust"
        );
        assert_eq!(
            resolve_location(base, "Rust").unwrap(),
            "https://en.wikipedia.org/wiki/Rust"
        );
        assert_eq!(
            resolve_location(base, "//m.wikipedia.org/a").unwrap(),
            "https://m.wikipedia.org/a"
        );
        assert_eq!(
            resolve_location(base, "http://other.org").unwrap(),
            "http://other.org/"
        );
        assert!(matches!(
            resolve_location(base, "javascript:alert(1)"),
            Err(Error::Failed(_))
        ));
    }

    #[test]
    fn headers_are_selected_and_joined() {
        let wanted = vec!["content-type".to_string(), "set-cookie".to_string()];
        let raw: Vec<(&str, &[u8])> = vec![
            ("Content-Type", b"text/html"),
            ("Server", b"x"),
            ("set-cookie", b"a=1"),
            ("Set-Cookie", b"b=2"),
        ];
        let got = select_headers(&wanted, raw);
        assert_eq!(
            got,
            BTreeMap::from([
                ("content-type".to_string(), "text/html".to_string()),
                ("set-cookie".to_string(), "a=1, b=2".to_string()),
            ])
        );
    }

    #[test]
    fn bodies_are_cut_at_character_boundaries() {
        let text = "héllo".as_bytes();
        assert_eq!(body_text(&text[..2], true), "h", "half of é is dropped");
        assert_eq!(body_text(text, false), "héllo");
        assert_eq!(
            body_text(&[0x66, 0xff, 0x6f], true),
            "f\u{fffd}o",
            "bad bytes mid-body are replaced"
        );
    }

    #[test]
    fn native_builds_refuse_to_fetch_through_the_sdk() {
        let e = wasmhub_plugin()
            .call_value("get", &json!({"url": "https://en.wikipedia.org/"}))
            .unwrap_err();
        assert!(
            matches!(&e, Error::Failed(m) if m.contains("only reachable from the wasm component")),
            "{e}"
        );
        let e = wasmhub_plugin()
            .call_value("get", &json!({"url": "file:///etc/passwd"}))
            .unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)));
    }

    #[test]
    fn network_examples_have_no_fixed_output_and_are_not_run_at_load() {
        let plugin = wasmhub_plugin();
        let get = &plugin.operations()[0];
        assert!(!get.examples_run_at_load());
        assert!((1..=3).contains(&get.examples().len()));
        assert!(
            get.examples().iter().all(|e| e.output().is_none()),
            "pages change"
        );
        assert!(
            plugin
                .instructions()
                .is_some_and(|i| i.contains("en.wikipedia.org"))
        );
    }
}
