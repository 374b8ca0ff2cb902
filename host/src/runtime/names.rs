//! What a plugin and an operation may be called: checked by the loader and the
//! operation specs' validation, and quoted by their error messages.

/// Longest plugin and operation name, in bytes.
pub(super) const MAX_NAME_LEN: usize = 64;

/// Whether `name` is a valid plugin name: `[a-z][a-z0-9_-]*`, at most 64 bytes.
pub fn valid_plugin_name(name: &str) -> bool {
    let mut b = name.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_lowercase())
        && b.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-')
        && name.len() <= MAX_NAME_LEN
}

/// Whether `name` is a valid operation name: `[a-z][a-z0-9_]*`, at most 64 bytes.
pub fn valid_operation_name(name: &str) -> bool {
    let mut b = name.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_lowercase())
        && b.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
        && name.len() <= MAX_NAME_LEN
}
