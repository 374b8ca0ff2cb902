//! A tool's JSON Schema (or a `response_format` schema) as Gemini's `Schema`,
//! the OpenAPI 3.0 subset its API takes: the keys of [`SCHEMA_KEYS`] kept,
//! `properties`, `items` and `anyOf` (also `oneOf`) mapped in turn, a type list
//! with `"null"` as the type and `nullable`, `const` as a one-value `enum`;
//! a local `$ref` (`#/$defs/...`, `#/definitions/...`, any JSON pointer into
//! the schema) inlined, its siblings (`description`, ...) over the target's,
//! at most [`MAX_REF_DEPTH`] deep; a reference to itself (a recursive type) or
//! to another document is an error, since Gemini's schema has no references.
//! Everything else (`$schema`, `$defs`, `additionalProperties`, `allOf`, `not`,
//! exclusive bounds, `examples`, ...) is dropped.

use serde_json::{Map, Value, json};

/// Schema keywords Gemini's `Schema` takes as they are.
const SCHEMA_KEYS: [&str; 15] = [
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "required",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "default",
];

/// How many `$ref`s deep a schema may inline (a chain of definitions).
pub(crate) const MAX_REF_DEPTH: usize = 16;

/// Why a schema cannot be put in Gemini's form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SchemaError {
    /// A `$ref` that is not a JSON pointer into the same schema.
    NotLocal(String),
    /// A `$ref` whose target the schema does not have.
    Missing(String),
    /// A `$ref` reached again from inside its own target (a recursive type).
    Cycle(String),
    /// More than [`MAX_REF_DEPTH`] references inside one another.
    TooDeep(String),
}

impl std::fmt::Display for SchemaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SchemaError::NotLocal(r) => write!(
                f,
                "$ref {r:?} points outside the schema; Gemini takes only local references (\"#/$defs/...\"), which are inlined"
            ),
            SchemaError::Missing(r) => write!(f, "$ref {r:?} names nothing in the schema"),
            SchemaError::Cycle(r) => write!(
                f,
                "$ref {r:?} refers to itself (a recursive type), which Gemini's schema cannot express"
            ),
            SchemaError::TooDeep(r) => write!(f, "$ref {r:?} is more than {MAX_REF_DEPTH} references deep"),
        }
    }
}

impl std::error::Error for SchemaError {}

/// `schema` in Gemini's form (see the module docs).
pub(crate) fn map(schema: &Value) -> Result<Value, SchemaError> {
    Mapper {
        root: schema,
        refs: Vec::new(),
    }
    .map(schema)
}

struct Mapper<'a> {
    root: &'a Value,
    /// The `$ref`s being inlined, outermost first.
    refs: Vec<String>,
}

impl Mapper<'_> {
    fn map(&mut self, s: &Value) -> Result<Value, SchemaError> {
        let Some(s) = s.as_object() else {
            return Ok(json!({}));
        };
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            return self.inline(r, s);
        }
        let mut out = Map::new();
        for key in SCHEMA_KEYS {
            if let Some(v) = s.get(key) {
                out.insert(key.into(), v.clone());
            }
        }
        if let Some(Value::Array(types)) = s.get("type") {
            let named: Vec<&Value> = types.iter().filter(|t| t.as_str() != Some("null")).collect();
            match named.as_slice() {
                [one] => {
                    out.insert("type".into(), (*one).clone());
                }
                _ => {
                    out.remove("type");
                }
            }
            if named.len() < types.len() {
                out.insert("nullable".into(), json!(true));
            }
        }
        if let Some(c) = s.get("const") {
            out.insert("enum".into(), json!([c]));
        }
        if let Some(Value::Object(props)) = s.get("properties") {
            let mut mapped = Map::new();
            for (k, v) in props {
                mapped.insert(k.clone(), self.map(v)?);
            }
            out.insert("properties".into(), Value::Object(mapped));
        }
        if let Some(items) = s.get("items").filter(|i| i.is_object()) {
            out.insert("items".into(), self.map(items)?);
        }
        if let Some(Value::Array(any)) = s.get("anyOf").or_else(|| s.get("oneOf")) {
            let any = any.iter().map(|a| self.map(a)).collect::<Result<_, _>>()?;
            out.insert("anyOf".into(), Value::Array(any));
        }
        Ok(Value::Object(out))
    }

    /// The target of `$ref` `r` mapped, with the referring schema's other
    /// keywords (`description`, ...) mapped over it.
    fn inline(&mut self, r: &str, at: &Map<String, Value>) -> Result<Value, SchemaError> {
        let pointer = r
            .strip_prefix('#')
            .ok_or_else(|| SchemaError::NotLocal(r.into()))?;
        if self.refs.iter().any(|seen| seen == r) {
            return Err(SchemaError::Cycle(r.into()));
        }
        if self.refs.len() >= MAX_REF_DEPTH {
            return Err(SchemaError::TooDeep(r.into()));
        }
        let root = self.root;
        let target = root
            .pointer(pointer)
            .ok_or_else(|| SchemaError::Missing(r.into()))?;
        self.refs.push(r.to_string());
        let mapped = self.map(target);
        self.refs.pop();
        let mut mapped = mapped?;
        let mut siblings = at.clone();
        siblings.remove("$ref");
        if let (Value::Object(out), Value::Object(own)) = (&mut mapped, self.map(&Value::Object(siblings))?) {
            out.extend(own);
        }
        Ok(mapped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_schema_maps_to_what_gemini_accepts() {
        let s = json!({"type": "object", "properties": {
            "tags": {"type": "array", "items": {"type": "string", "const": "a", "examples": ["a"]}, "minItems": 1},
            "when": {"oneOf": [{"type": "string", "format": "date-time"}, {"type": ["integer", "null"], "exclusiveMinimum": 0}]}},
            "additionalProperties": false, "allOf": [{"required": ["tags"]}]});
        assert_eq!(
            map(&s).unwrap(),
            json!({"type": "object", "properties": {
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a"]}, "minItems": 1},
                "when": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "integer", "nullable": true}]}}})
        );
    }

    #[test]
    fn local_references_are_inlined() {
        // The shape Pydantic's `model_json_schema()` gives a nested model
        // (its documentation's example), and an older `definitions` one.
        let s = json!({"$defs": {
            "Address": {"type": "object", "title": "Address",
                        "properties": {"city": {"type": "string"}, "zip": {"$ref": "#/definitions/Zip"}}}},
            "definitions": {"Zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
            "type": "object", "title": "Person",
            "properties": {"home": {"$ref": "#/$defs/Address", "description": "Where they live"},
                           "work": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}]}},
            "required": ["home"]});
        let address = json!({"type": "object", "title": "Address",
            "properties": {"city": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}}});
        let mut home = address.clone();
        home["description"] = json!("Where they live");
        assert_eq!(
            map(&s).unwrap(),
            json!({"type": "object", "title": "Person", "required": ["home"],
                   "properties": {"home": home, "work": {"anyOf": [address, {"type": "null"}]}}})
        );
    }

    #[test]
    fn references_gemini_cannot_take_are_errors() {
        let tree = json!({"$defs": {"Node": {"type": "object", "properties": {
            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}},
            "properties": {"root": {"$ref": "#/$defs/Node"}}});
        let err = map(&tree).unwrap_err();
        assert_eq!(err, SchemaError::Cycle("#/$defs/Node".into()));
        assert!(err.to_string().contains("refers to itself"), "{err}");
        let remote = json!({"properties": {"a": {"$ref": "https://example.com/a.json"}}});
        assert_eq!(
            map(&remote).unwrap_err(),
            SchemaError::NotLocal("https://example.com/a.json".into())
        );
        let missing = json!({"properties": {"a": {"$ref": "#/$defs/Nope"}}});
        assert_eq!(
            map(&missing).unwrap_err(),
            SchemaError::Missing("#/$defs/Nope".into())
        );
        let mut chain = json!({"$defs": {}, "properties": {"a": {"$ref": "#/$defs/d0"}}});
        for i in 0..=MAX_REF_DEPTH {
            chain["$defs"][format!("d{i}")] = json!({"$ref": format!("#/$defs/d{}", i + 1)});
        }
        chain["$defs"][format!("d{}", MAX_REF_DEPTH + 1)] = json!({"type": "string"});
        assert!(matches!(map(&chain).unwrap_err(), SchemaError::TooDeep(_)));
    }
}
