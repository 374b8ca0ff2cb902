//! Percent-encoding of a URL query value (RFC 3986: every byte but the
//! unreserved characters `A-Z a-z 0-9 - . _ ~` as `%XX`): the one encoder for
//! the query strings the hub builds (OAuth redirects, registry scopes, provider
//! page tokens).

/// `text` percent-encoded for a query.
pub(crate) fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_unreserved_characters_stay() {
        assert_eq!(super::encode("aZ09-._~"), "aZ09-._~");
        assert_eq!(super::encode("a b+c/d=é"), "a%20b%2Bc%2Fd%3D%C3%A9");
    }
}
