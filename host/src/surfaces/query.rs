//! Reading a request's query string: a parameter's raw value, and its
//! percent-decoded text (`?principal=`), whose mistakes are a 400 naming the key.

use super::respond::{self, Resp};
use crate::hub::{Caller, Visible};
use http::StatusCode;

/// The raw value of query parameter `key`.
pub(crate) fn value<'q>(query: Option<&'q str>, key: &str) -> Option<&'q str> {
    query
        .unwrap_or("")
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

/// The value of `key`, percent-decoded (`+` is a space), if present.
pub(crate) fn text(query: Option<&str>, key: &str) -> Result<Option<String>, Resp> {
    let Some(raw) = value(query, key) else {
        return Ok(None);
    };
    let bad = || {
        respond::error(
            StatusCode::BAD_REQUEST,
            "invalid_input",
            format!("the query parameter {key} is not valid percent-encoded UTF-8: {raw:?}"),
        )
    };
    decode(raw).map(Some).ok_or_else(bad)
}

/// `raw` percent-decoded (`+` is a space, as in forms); `None` for a bad escape
/// or bytes that are not UTF-8.
pub(crate) fn decode(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = raw.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Whose items a listing shows to `caller`, given its `?principal=`.
pub(crate) fn visible(caller: &Caller, query: Option<&str>) -> Result<Visible, Resp> {
    let requested = text(query, "principal")?;
    Ok(caller.visible(requested.as_deref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(query: &str) -> Option<String> {
        text(Some(query), "principal").unwrap_or_else(|resp| panic!("{query}: {}", resp.status()))
    }

    fn refused(query: &str) -> u16 {
        match text(Some(query), "principal") {
            Ok(v) => panic!("{query} was accepted as {v:?}"),
            Err(resp) => resp.status().as_u16(),
        }
    }

    #[test]
    fn values_are_decoded_and_bad_escapes_refused() {
        assert_eq!(decoded("a=1&principal=al%20ice").as_deref(), Some("al ice"));
        assert_eq!(decoded("principal=b+ob").as_deref(), Some("b ob"));
        assert_eq!(decoded("limit=3"), None);
        assert_eq!(refused("principal=%zz"), 400);
        assert_eq!(refused("principal=%4"), 400);
        assert_eq!(refused("principal=%ff"), 400, "not UTF-8");
    }
}
