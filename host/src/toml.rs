//! TOML text (the config file, plugin manifests) into serde types, with the line
//! and column of every mistake.
//!
//! `toml-span` parses and keeps the span of every key and value; this module is
//! the serde `Deserializer` over its tree. An error raised while a value is being
//! deserialized (wrong type, out of range, unknown field, missing field) takes
//! the span of the innermost value or key it happened in, so the config and the
//! manifests keep `line N` in every message. Datetimes are not supported (no key
//! of ours holds one); `toml-span` rejects them with a positioned error.

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;
use toml_span::value::{Key, ValueInner};
use toml_span::{Span, Value};

/// A mistake in TOML text: what is wrong and, when known, where (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TomlError {
    /// What is wrong, without the position.
    pub message: String,
    /// The 1-based line; `None` when the error has no position in the text.
    pub line: Option<usize>,
    /// The 1-based column in characters (not bytes); `None` with `line`.
    pub column: Option<usize>,
}

impl fmt::Display for TomlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(line), Some(column)) => write!(f, "line {line}, column {column}: {}", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for TomlError {}

/// Parsed TOML text, kept so that later checks can point at a value's line.
pub struct Document<'t> {
    text: &'t str,
    root: Value<'t>,
}

impl<'t> Document<'t> {
    /// Parses `text`; a syntax error carries its line and column.
    pub fn parse(text: &'t str) -> Result<Document<'t>, TomlError> {
        let root = toml_span::parse(text).map_err(|e| TomlError {
            message: e.to_string(),
            line: Some(line_of(text, e.span.start)),
            column: Some(column_of(text, e.span.start)),
        })?;
        Ok(Document { text, root })
    }

    /// The whole document as `T`.
    pub fn deserialize<T: DeserializeOwned>(&self) -> Result<T, TomlError> {
        T::deserialize(ValueDe(&self.root)).map_err(|e| self.locate(e))
    }

    /// The line of the value at `pointer` (`/limits/memory_mb`, `/dirs/0/host`).
    pub fn line_at(&self, pointer: &str) -> Option<usize> {
        let value = self.root.pointer(pointer)?;
        Some(line_of(self.text, value.span.start))
    }

    /// The document as JSON (tables become objects), for merging overrides.
    pub fn to_json(&self) -> serde_json::Value {
        to_json(&self.root)
    }

    fn locate(&self, e: DeError) -> TomlError {
        TomlError {
            message: e.message,
            line: e.span.map(|s| line_of(self.text, s.start)),
            column: e.span.map(|s| column_of(self.text, s.start)),
        }
    }
}

/// Parses `text` as a `T`.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, TomlError> {
    Document::parse(text)?.deserialize()
}

/// `raw` read as one TOML value (`128`, `true`, `["a"]`, `"text"`), as JSON.
pub fn value_from_str(raw: &str) -> Option<serde_json::Value> {
    let text = format!("v = {raw}");
    let doc = Document::parse(&text).ok()?;
    doc.root.pointer("/v").map(to_json)
}

fn to_json(value: &Value<'_>) -> serde_json::Value {
    use serde_json::Value as J;
    match value.as_ref() {
        ValueInner::String(s) => J::String(s.to_string()),
        ValueInner::Integer(i) => J::from(*i),
        ValueInner::Float(f) => J::from(*f),
        ValueInner::Boolean(b) => J::Bool(*b),
        ValueInner::Array(items) => J::Array(items.iter().map(to_json).collect()),
        ValueInner::Table(table) => J::Object(
            table
                .iter()
                .map(|(k, v)| (k.name.to_string(), to_json(v)))
                .collect(),
        ),
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn column_of(text: &str, offset: usize) -> usize {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    String::from_utf8_lossy(&before[line_start..]).chars().count() + 1
}

/// A serde error and the span of the innermost value or key it arose in.
#[derive(Debug)]
struct DeError {
    message: String,
    span: Option<Span>,
}

impl DeError {
    /// Keeps an inner, more precise span; otherwise takes `span`.
    fn at(mut self, span: Span) -> DeError {
        self.span.get_or_insert(span);
        self
    }
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<M: fmt::Display>(message: M) -> DeError {
        DeError {
            message: message.to_string(),
            span: None,
        }
    }
}

struct ValueDe<'a, 't>(&'a Value<'t>);

impl<'de> de::Deserializer<'de> for ValueDe<'_, '_> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let span = self.0.span;
        let result = match self.0.as_ref() {
            ValueInner::String(s) => visitor.visit_str(s),
            ValueInner::Integer(i) => visitor.visit_i64(*i),
            ValueInner::Float(f) => visitor.visit_f64(*f),
            ValueInner::Boolean(b) => visitor.visit_bool(*b),
            ValueInner::Array(items) => visitor.visit_seq(SeqDe(items.iter())),
            ValueInner::Table(table) => visitor.visit_map(MapDe {
                entries: table.iter(),
                next: None,
            }),
        };
        result.map_err(|e| e.at(span))
    }

    /// A key that is present holds a value: `None` only comes from absent keys.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let span = self.0.span;
        visitor.visit_some(self).map_err(|e| e.at(span))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let span = self.0.span;
        visitor.visit_newtype_struct(self).map_err(|e| e.at(span))
    }

    /// Unit variants are strings (`mode = "fast"`).
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let span = self.0.span;
        match self.0.as_ref() {
            ValueInner::String(s) => {
                let variant: de::value::StrDeserializer<'_, DeError> = s.as_ref().into_deserializer();
                visitor.visit_enum(variant).map_err(|e| e.at(span))
            }
            other => Err(DeError {
                message: format!(
                    "invalid type: {}, expected a string naming a variant",
                    other.type_str()
                ),
                span: Some(span),
            }),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf unit unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

struct SeqDe<'a, 't>(std::slice::Iter<'a, Value<'t>>);

impl<'de> SeqAccess<'de> for SeqDe<'_, '_> {
    type Error = DeError;

    fn next_element_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<Option<S::Value>, DeError> {
        self.0.next().map(|v| seed.deserialize(ValueDe(v))).transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct MapDe<'a, 't> {
    entries: std::collections::btree_map::Iter<'a, Key<'t>, Value<'t>>,
    next: Option<&'a Value<'t>>,
}

impl<'de> MapAccess<'de> for MapDe<'_, '_> {
    type Error = DeError;

    fn next_key_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<Option<S::Value>, DeError> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.next = Some(value);
        let name: de::value::StrDeserializer<'_, DeError> = key.name.as_ref().into_deserializer();
        seed.deserialize(name).map(Some).map_err(|e| e.at(key.span))
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, DeError> {
        let value = self.next.take().expect("serde asks for a value after its key");
        seed.deserialize(ValueDe(value))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Conf {
        name: String,
        #[serde(default)]
        port: Option<u16>,
        #[serde(default)]
        tags: Vec<String>,
        #[serde(default)]
        limits: Limits,
        #[serde(default)]
        headers: BTreeMap<String, String>,
        #[serde(default)]
        mode: Mode,
        #[serde(default)]
        ratio: f64,
    }

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields, default)]
    struct Limits {
        memory_mb: u64,
        strict: bool,
    }

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        #[default]
        Slow,
        Fast,
    }

    fn err(text: &str) -> TomlError {
        from_str::<Conf>(text).unwrap_err()
    }

    #[test]
    fn reads_every_kind_of_value() {
        let text = "name = \"hub\"\nport = 8080\ntags = [\"a\", 'b']\nmode = \"fast\"\nratio = 0.5\n\
                    [limits]\nmemory_mb = 64\nstrict = true\n[headers]\nx-one = \"1\"\n";
        let conf: Conf = from_str(text).unwrap();
        assert_eq!(
            conf,
            Conf {
                name: "hub".into(),
                port: Some(8080),
                tags: vec!["a".into(), "b".into()],
                limits: Limits {
                    memory_mb: 64,
                    strict: true
                },
                headers: BTreeMap::from([("x-one".into(), "1".into())]),
                mode: Mode::Fast,
                ratio: 0.5,
            }
        );
        let minimal: Conf = from_str("name = 'x'").unwrap();
        assert_eq!((minimal.port, minimal.mode), (None, Mode::Slow));
    }

    #[test]
    fn syntax_errors_have_line_and_column() {
        let e = err("name = \"x\"\nport = = 3\n");
        assert_eq!((e.line, e.column), (Some(2), Some(8)), "{e}");
        let e = err("name = \"x\"\nname = \"y\"\n");
        assert_eq!(e.line, Some(2), "{e}");
        assert!(e.message.contains("duplicate key"), "{e}");
    }

    #[test]
    fn type_errors_point_at_the_value() {
        let e = err("name = \"x\"\n\n[limits]\nmemory_mb = \"lots\"\n");
        assert_eq!((e.line, e.column), (Some(4), Some(14)), "{e}"); // a string's span starts inside its quotes
        assert!(
            e.message.contains("invalid type: string \"lots\", expected u64"),
            "{e}"
        );
        let e = err("name = \"x\"\nport = 70000\n");
        assert_eq!(e.line, Some(2), "{e}");
        assert!(e.message.contains("70000"), "{e}");
        let e = err("name = \"x\"\ntags = [\"a\",\n  3]\n");
        assert_eq!(e.line, Some(3), "{e}");
        let e = err("name = \"x\"\nmode = \"medium\"\n");
        assert_eq!(e.line, Some(2), "{e}");
        assert!(e.message.contains("unknown variant `medium`"), "{e}");
    }

    #[test]
    fn unknown_and_missing_fields_are_named() {
        let e = err("name = \"x\"\n[limits]\nmemroy_mb = 3\n");
        assert_eq!((e.line, e.column), (Some(3), Some(1)), "{e}");
        assert!(e.message.contains("unknown field `memroy_mb`"), "{e}");
        let e = err("port = 1\n");
        assert!(e.message.contains("missing field `name`"), "{e}");
        assert_eq!(e.to_string(), format!("line 1, column 1: {}", e.message));
    }

    #[test]
    fn lines_of_values_and_json_for_overrides() {
        let text = "name = \"x\"\n[[dirs]]\nhost = \"a\"\n[[dirs]]\nhost = \"b\"\n";
        let doc = Document::parse(text).unwrap();
        assert_eq!(doc.line_at("/dirs/1/host"), Some(5));
        assert_eq!(doc.line_at("/dirs/2/host"), None);
        assert_eq!(
            doc.to_json(),
            serde_json::json!({"name": "x", "dirs": [{"host": "a"}, {"host": "b"}]})
        );
        assert_eq!(value_from_str("128"), Some(serde_json::json!(128)));
        assert_eq!(
            value_from_str("[\"a\", true]"),
            Some(serde_json::json!(["a", true]))
        );
        assert_eq!(value_from_str("openai/gpt-4o"), None);
    }
}
