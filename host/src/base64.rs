//! Standard base64 (RFC 4648 with padding), both ways: MCP's `=?base64?…?=`
//! header values and the registry credentials of Docker config files and HTTP
//! Basic auth; and the URL-safe unpadded alphabet both ways (OAuth secrets and PKCE
//! challenges out, JWT segments and JWK members in). A few lines here rather than a crate (the dependency budget).

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `bytes` as standard base64 with padding.
pub(crate) fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `bytes` as URL-safe base64 without padding (RFC 4648 §5, as RFC 7636 uses it).
pub(crate) fn encode_url(bytes: &[u8]) -> String {
    encode(bytes)
        .trim_end_matches('=')
        .chars()
        .map(|c| match c {
            '+' => '-',
            '/' => '_',
            c => c,
        })
        .collect()
}

/// Strict standard base64 (padding required, canonical trailing bits).
pub(crate) fn decode(s: &str) -> Option<Vec<u8>> {
    fn sextet(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let bytes = s.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for (i, chunk) in bytes.chunks(4).enumerate() {
        let last = i == bytes.len() / 4 - 1;
        let pad = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for &c in &chunk[..4 - pad] {
            n = (n << 6) | sextet(c)?;
        }
        n <<= 6 * pad as u32;
        let decoded = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        let keep = 3 - pad;
        // Canonical form: the bits below the kept bytes must be zero.
        if decoded[keep..].iter().any(|&b| b != 0) {
            return None;
        }
        out.extend_from_slice(&decoded[..keep]);
    }
    Some(out)
}

/// Strict URL-safe base64 without padding (RFC 7515 §2's base64url): JWT segments
/// and JWK members. Padding and the standard alphabet's `+`/`/` are refused.
pub(crate) fn decode_url(s: &str) -> Option<Vec<u8>> {
    if s.bytes().any(|c| matches!(c, b'+' | b'/' | b'=')) || s.len() % 4 == 1 {
        return None;
    }
    let mut standard: String = s
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    while !standard.len().is_multiple_of(4) {
        standard.push('=');
    }
    decode(&standard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_and_decodes_strictly() {
        assert_eq!(decode("").unwrap(), b"");
        assert_eq!(decode("YWJj").unwrap(), b"abc");
        assert_eq!(decode("YQ==").unwrap(), b"a");
        assert_eq!(decode("YQ"), None);
        for text in ["", "a", "ab", "abc", "user:pa:ss", "\u{e9}t\u{e9}"] {
            assert_eq!(
                decode(&encode(text.as_bytes())).unwrap(),
                text.as_bytes(),
                "{text}"
            );
        }
        assert_eq!(encode(b"user:pass"), "dXNlcjpwYXNz");
    }

    #[test]
    fn url_safe_round_trips_and_refuses_the_standard_alphabet() {
        for bytes in [&b""[..], b"a", b"ab", b"abc", &[0xfb, 0xff, 0xfe], &[0xff; 7]] {
            assert_eq!(decode_url(&encode_url(bytes)).unwrap(), bytes);
        }
        assert_eq!(decode_url("-_8"), Some(vec![0xfb, 0xff]));
        assert_eq!(decode_url("+/8"), None);
        assert_eq!(decode_url("YQ=="), None);
        assert_eq!(decode_url("YWJjZ"), None);
        // Non-canonical trailing bits are refused, as in `decode`.
        assert_eq!(decode_url("YR"), None);
    }
}
