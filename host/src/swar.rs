//! Searching bytes eight at a time ("SIMD within a register"): the one loop behind
//! the SSE parser's line search and the chunk scanner's string search, which both
//! spend most of their time skipping long runs of ordinary bytes.

/// `0x01` in every byte.
const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of every byte of `v` that is zero (and, by borrows, possibly of
/// bytes after one that is; only the lowest flag is exact).
pub(crate) fn zero_bytes(v: u64) -> u64 {
    v.wrapping_sub(ONES) & !v & HIGHS
}

/// The high bit of every byte of `v` below `n` (same borrow caveat).
pub(crate) fn bytes_below(v: u64, n: u8) -> u64 {
    v.wrapping_sub(ONES * u64::from(n)) & !v & HIGHS
}

/// `v` with each byte compared to `b`: its zero bytes are the matches.
pub(crate) fn xor_each(v: u64, b: u8) -> u64 {
    v ^ (ONES * u64::from(b))
}

/// Offset of the first byte of `bytes` that `is_match` accepts. `flags` must flag
/// (with a byte's high bit) at least the lowest matching byte of a little-endian
/// word and no byte below it; the tail shorter than a word is checked with
/// `is_match`.
pub(crate) fn find_first(
    bytes: &[u8],
    flags: impl Fn(u64) -> u64,
    is_match: impl Fn(u8) -> bool,
) -> Option<usize> {
    let mut i = 0;
    while i + 8 <= bytes.len() {
        let found = flags(u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes")));
        if found != 0 {
            return Some(i + found.trailing_zeros() as usize / 8);
        }
        i += 8;
    }
    bytes[i..].iter().position(|&b| is_match(b)).map(|p| p + i)
}

/// Offset of the first byte of `bytes` that a JSON string cannot hold as it is
/// (`"`, `\` or a control character); `None` when there is none. The chunk
/// scanner looks for the end of a string with it, the UI encoder for what to
/// escape.
pub(crate) fn json_special(bytes: &[u8]) -> Option<usize> {
    find_first(
        bytes,
        |w| zero_bytes(xor_each(w, b'"')) | zero_bytes(xor_each(w, b'\\')) | bytes_below(w, 0x20),
        |b| b == b'"' || b == b'\\' || b < 0x20,
    )
}
