//! [`Text`]: the string type of the UI chunk fields a stream repeats for every
//! delta (part ids, tool call ids, the delta text itself).
//!
//! A streamed answer is mostly `text-delta` chunks of a token or two, each naming
//! its part; with `String` fields every one of them cost two heap allocations (the
//! id copied from the transformer and the delta), a third of the transformer's
//! time with the matching frees. A `Text` of up to [`INLINE`] bytes lives inside
//! the value, and a longer one in an `Arc<str>`, so copying an id is a memcpy or a
//! reference count and a short delta never touches the heap. It reads as a `str`
//! (`Deref`, `as_str`), compares with `str`/`String`, hashes like a `str` (so
//! it can be looked up in `String`-keyed maps by `as_str()`) and (de)serializes as
//! a plain JSON string.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

/// The longest text kept inline: with the length byte and the enum's tag, a
/// `Text` is as large as a `String` (24 bytes), so chunks do not grow.
const INLINE: usize = 22;

/// An immutable string, inline up to 22 bytes, shared beyond. See the module
/// docs.
#[derive(Clone)]
pub struct Text(Repr);

#[derive(Clone)]
enum Repr {
    /// `bytes[..len]` is the text; the rest is zero.
    Inline {
        len: u8,
        bytes: [u8; INLINE],
    },
    Shared(Arc<str>),
}

impl Text {
    /// The empty text.
    pub const fn new() -> Text {
        Text(Repr::Inline {
            len: 0,
            bytes: [0; INLINE],
        })
    }

    /// The text as a `str`.
    #[inline]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Inline { len, bytes } => {
                let bytes = &bytes[..*len as usize];
                debug_assert!(std::str::from_utf8(bytes).is_ok());
                // SAFETY: `Repr::Inline` is only built by `Text::inline` (and
                // `Text::new`, empty), which copies all of one `&str`, so
                // `bytes[..len]` is valid UTF-8; the fields are private and never
                // written afterwards. Checking again cost ~5 ns per read, and the
                // encoder reads two per delta chunk (~2% of the transformer).
                unsafe { std::str::from_utf8_unchecked(bytes) }
            }
            Repr::Shared(s) => s,
        }
    }

    /// Whether the text lives inline (no heap block behind it).
    pub fn is_inline(&self) -> bool {
        matches!(self.0, Repr::Inline { .. })
    }

    fn inline(s: &str) -> Option<Text> {
        let len = s.len();
        if len > INLINE {
            return None;
        }
        let mut bytes = [0; INLINE];
        bytes[..len].copy_from_slice(s.as_bytes());
        Some(Text(Repr::Inline {
            len: len as u8,
            bytes,
        }))
    }
}

impl Default for Text {
    fn default() -> Text {
        Text::new()
    }
}

impl Deref for Text {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text::inline(s).unwrap_or_else(|| Text(Repr::Shared(Arc::from(s))))
    }
}

impl From<&String> for Text {
    fn from(s: &String) -> Text {
        Text::from(s.as_str())
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text::inline(&s).unwrap_or_else(|| Text(Repr::Shared(Arc::from(s))))
    }
}

impl From<Text> for String {
    fn from(t: Text) -> String {
        t.as_str().to_owned()
    }
}

/// Same text, whichever way it is stored.
impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

/// Equal `Text`s hash equally, and like the `str` they read as (see `Borrow`).
impl Hash for Text {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl PartialOrd for Text {
    fn partial_cmp(&self, other: &Text) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Text {
    fn cmp(&self, other: &Text) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

/// `Text == str`, `Text == String`, `Text == &str` and the mirrored forms.
macro_rules! eq_with {
    ($($other:ty),*) => {$(
        impl PartialEq<$other> for Text {
            fn eq(&self, other: &$other) -> bool {
                self.as_str() == &other[..]
            }
        }
        impl PartialEq<Text> for $other {
            fn eq(&self, other: &Text) -> bool {
                &self[..] == other.as_str()
            }
        }
    )*};
}
eq_with!(str, &str, String);

/// Shown as the `str` is, so a chunk's `Debug` reads as it did with `String`s.
impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self)
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Text, D::Error> {
        deserializer.deserialize_string(TextVisitor)
    }
}

/// Takes a borrowed string without copying it into a `String` first.
struct TextVisitor;

impl serde::de::Visitor<'_> for TextVisitor {
    type Value = Text;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Text, E> {
        Ok(Text::from(s))
    }

    fn visit_string<E: serde::de::Error>(self, s: String) -> Result<Text, E> {
        Ok(Text::from(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_inline_and_long_text_is_shared() {
        assert_eq!(std::mem::size_of::<Text>(), std::mem::size_of::<String>());
        let exactly = "x".repeat(INLINE);
        for (s, inline) in [("", true), ("héllo 😀", true), (&exactly[..], true)] {
            let t = Text::from(s);
            assert_eq!((t.as_str(), t.is_inline()), (s, inline));
        }
        let long = format!("{exactly}é");
        let t = Text::from(long.clone());
        assert!(!t.is_inline() && t == long && t.len() == INLINE + 2);
        let copy = t.clone();
        let (Repr::Shared(a), Repr::Shared(b)) = (&t.0, &copy.0) else {
            panic!("shared");
        };
        assert!(Arc::ptr_eq(a, b), "a clone of shared text shares it");
    }

    #[test]
    fn compares_hashes_and_serializes_like_a_string() {
        let long = "a tool call id longer than the inline part";
        for s in ["call_1", long] {
            let (t, owned) = (Text::from(s), s.to_string());
            assert_eq!(t, s);
            assert_eq!(s, t);
            assert_eq!(t, *s);
            assert_eq!(t, owned);
            assert_eq!(owned, t);
            assert_eq!(t, Text::from(owned.clone()));
            let mut map = std::collections::HashMap::new();
            map.insert(t.clone(), 1);
            assert_eq!(map.get(s), Some(&1));
            assert_eq!(format!("{t} {t:?}"), format!("{s} {s:?}"));
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, serde_json::to_string(s).unwrap());
            assert_eq!(serde_json::from_str::<Text>(&json).unwrap(), t);
            let value = serde_json::Value::String(s.into());
            assert_eq!(serde_json::from_value::<Text>(value).unwrap(), t);
        }
        assert!(serde_json::from_str::<Text>("1").is_err());
        let (a, b) = (Text::from("a"), Text::from(long));
        assert!(a < b);
    }
}
