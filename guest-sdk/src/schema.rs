//! JSON Schema derivation for operation inputs and outputs (schemars 1.x, draft 2020-12),
//! plus the integer-range pass that makes 64-bit integers safe to send.
//!
//! How integers travel: as plain JSON integers, never as strings. The host parses
//! JSON with serde_json, which keeps every `i64`/`u64` exact, and so does this SDK's
//! decoder, so `u64::MAX` arrives as `18446744073709551615` and leaves the same way.
//! What can lose digits is a client that parses JSON numbers as doubles (JavaScript):
//! the derived schema says so in the field's description and carries the exact
//! `minimum`/`maximum` of the Rust type, so an out-of-range value is rejected by the
//! host's validator with a per-field message instead of wrapping or truncating.

use schemars::{JsonSchema, SchemaGenerator, generate::SchemaSettings};
use serde_json::{Map, Value};

/// Appended to the description of every integer wider than 53 bits.
pub const WIDE_INTEGER_NOTE: &str = "64-bit integer: send it as a JSON integer (not a string); every \
     digit is kept exactly, but clients that parse numbers as doubles lose precision past 2^53.";

/// The input schema of `T`: subschemas inlined (models and MCP clients handle `$ref`
/// poorly; recursive types still use `$defs`), integer ranges made explicit.
pub fn input_schema<T: JsonSchema>() -> Value {
    derive::<T>(SchemaSettings::draft2020_12())
}

/// The output schema of `T` (what `T` serializes to), or `None` when `T` accepts
/// anything (`serde_json::Value`), since an always-true schema checks nothing.
pub fn output_schema<T: JsonSchema>() -> Option<Value> {
    let schema = derive::<T>(SchemaSettings::draft2020_12().for_serialize());
    if is_trivial(&schema) { None } else { Some(schema) }
}

fn derive<T: JsonSchema>(settings: SchemaSettings) -> Value {
    let settings = settings.with(|s| s.inline_subschemas = true);
    let schema = SchemaGenerator::new(settings).into_root_schema_for::<T>();
    let mut value = schema.to_value();
    add_integer_ranges(&mut value);
    value
}

/// True when the schema constrains nothing (`true`, `{}` or only annotations).
fn is_trivial(schema: &Value) -> bool {
    match schema {
        Value::Bool(true) => true,
        Value::Object(map) => map
            .keys()
            .all(|k| matches!(k.as_str(), "$schema" | "title" | "description")),
        _ => false,
    }
}

/// Whether the root describes an object, as the WIT contract requires of inputs.
pub fn root_is_object(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "object",
        _ => false,
    }
}

/// The exact bounds of the integer formats schemars emits, for the target this runs
/// on (`usize` is 32-bit inside a wasm32 guest, so its bounds are the guest's).
fn format_bounds(format: &str) -> Option<(Value, Value, bool)> {
    let (min, max, wide): (Value, Value, bool) = match format {
        "int8" => (i8::MIN.into(), i8::MAX.into(), false),
        "uint8" => (u8::MIN.into(), u8::MAX.into(), false),
        "int16" => (i16::MIN.into(), i16::MAX.into(), false),
        "uint16" => (u16::MIN.into(), u16::MAX.into(), false),
        "int32" => (i32::MIN.into(), i32::MAX.into(), false),
        "uint32" => (u32::MIN.into(), u32::MAX.into(), false),
        "int64" => (i64::MIN.into(), i64::MAX.into(), true),
        "uint64" => (u64::MIN.into(), u64::MAX.into(), true),
        "int" => (
            (isize::MIN as i64).into(),
            (isize::MAX as i64).into(),
            isize::BITS > 53,
        ),
        "uint" => (0u64.into(), (usize::MAX as u64).into(), usize::BITS > 53),
        _ => return None,
    };
    Some((min, max, wide))
}

fn is_integer_type(t: Option<&Value>) -> bool {
    match t {
        Some(Value::String(s)) => s == "integer",
        Some(Value::Array(a)) => a.iter().any(|v| v == "integer"),
        _ => false,
    }
}

/// Walks every subschema and gives each sized integer its exact `minimum`/`maximum`
/// (keeping a tighter bound the author set) and wide ones the precision note.
pub fn add_integer_ranges(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    if is_integer_type(map.get("type"))
        && let Some((min, max, wide)) = map.get("format").and_then(Value::as_str).and_then(format_bounds)
    {
        map.entry("minimum").or_insert(min);
        map.entry("maximum").or_insert(max);
        if wide {
            append_note(map);
        }
    }
    for (key, child) in map.iter_mut() {
        // These hold instance data, not subschemas.
        if matches!(key.as_str(), "const" | "enum" | "default" | "examples") {
            continue;
        }
        match child {
            Value::Object(_) => add_integer_ranges(child),
            Value::Array(items) => items.iter_mut().for_each(add_integer_ranges),
            _ => {}
        }
    }
}

fn append_note(map: &mut Map<String, Value>) {
    let description = match map.get("description").and_then(Value::as_str) {
        Some(d) if d.contains(WIDE_INTEGER_NOTE) => return,
        Some(d) if !d.is_empty() => format!("{d}\n\n{WIDE_INTEGER_NOTE}"),
        _ => WIDE_INTEGER_NOTE.to_string(),
    };
    map.insert("description".into(), Value::String(description));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};
    use serde_json::json;

    /// A search request.
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Request {
        /// What to look for.
        query: String,
        /// Where to look.
        scope: Scope,
        /// Filters applied to results.
        filter: Filter,
        /// Results per page.
        #[schemars(range(min = 1, max = 100))]
        limit: Option<u8>,
        /// An opaque cursor.
        cursor: Option<u64>,
        offset: i64,
        mode: Mode,
    }

    /// Where to search.
    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    #[allow(dead_code)]
    enum Scope {
        /// Everything.
        All,
        /// Titles only.
        Titles,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Filter {
        /// Minimum score.
        min_score: f64,
        tags: Vec<String>,
        nested: Inner,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        depth: u32,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    #[allow(dead_code)]
    enum Mode {
        Exact,
        Fuzzy { distance: u16 },
    }

    #[test]
    fn input_schema_is_draft_2020_12_inlined_with_docs_and_ranges() {
        let s = input_schema::<Request>();
        assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
        assert!(root_is_object(&s));
        assert_eq!(s["description"], "A search request.");
        assert_eq!(s["additionalProperties"], false);
        assert!(s.get("$defs").is_none(), "subschemas are inlined: {s:#}");
        let required: Vec<&str> = s["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(required, ["query", "scope", "filter", "offset", "mode"]);

        let p = &s["properties"];
        assert_eq!(p["query"]["description"], "What to look for.");
        // Doc comments on unit variants become per-value descriptions.
        let scope = serde_json::to_string(&p["scope"]).unwrap();
        assert!(
            scope.contains("\"all\"") && scope.contains("Titles only."),
            "{scope}"
        );
        // Nested structs are inlined with their own docs and ranges.
        assert_eq!(
            p["filter"]["properties"]["min_score"]["description"],
            "Minimum score."
        );
        assert_eq!(
            p["filter"]["properties"]["nested"]["properties"]["depth"]["maximum"],
            json!(u32::MAX)
        );
        // The author's tighter bound wins; optional fields are nullable, not required.
        assert_eq!(p["limit"]["minimum"], 1);
        assert_eq!(p["limit"]["maximum"], 100);
        assert_eq!(p["limit"]["type"], json!(["integer", "null"]));
        // Internally tagged enum variants carry their fields' ranges too.
        let fuzzy = serde_json::to_string(&p["mode"]).unwrap();
        assert!(fuzzy.contains("\"maximum\":65535"), "{fuzzy}");
    }

    #[test]
    fn wide_integers_get_exact_bounds_and_the_precision_note() {
        let s = input_schema::<Request>();
        let cursor = &s["properties"]["cursor"];
        assert_eq!(cursor["minimum"], json!(0));
        assert_eq!(cursor["maximum"], json!(u64::MAX));
        assert_eq!(
            cursor["maximum"].as_u64(),
            Some(u64::MAX),
            "bound kept exact, not as a float"
        );
        let d = cursor["description"].as_str().unwrap();
        assert!(
            d.starts_with("An opaque cursor.") && d.ends_with(WIDE_INTEGER_NOTE),
            "{d}"
        );
        let offset = &s["properties"]["offset"];
        assert_eq!(offset["minimum"].as_i64(), Some(i64::MIN));
        assert_eq!(offset["maximum"].as_i64(), Some(i64::MAX));
        assert_eq!(offset["description"], WIDE_INTEGER_NOTE);
        // 32-bit integers are exact in every client: no note.
        let depth = &s["properties"]["filter"]["properties"]["nested"]["properties"]["depth"];
        assert!(depth.get("description").is_none());
    }

    #[test]
    fn the_pass_is_idempotent_and_skips_instance_data() {
        let mut s = json!({
            "type": "integer", "format": "int64", "description": "n",
            "default": {"type": "integer", "format": "int8"},
        });
        add_integer_ranges(&mut s);
        let once = s.clone();
        add_integer_ranges(&mut s);
        assert_eq!(s, once);
        assert_eq!(s["default"], json!({"type": "integer", "format": "int8"}));
    }

    #[derive(Serialize, JsonSchema)]
    struct Out {
        total: u64,
    }

    #[test]
    fn output_schema_describes_serialization_and_is_omitted_for_any_value() {
        let s = output_schema::<Out>().unwrap();
        assert_eq!(s["properties"]["total"]["maximum"], json!(u64::MAX));
        assert_eq!(output_schema::<Value>(), None);
    }

    #[test]
    fn non_object_roots_are_detected() {
        assert!(!root_is_object(&input_schema::<String>()));
        assert!(!root_is_object(&input_schema::<Scope>()));
        assert!(root_is_object(&input_schema::<Inner>()));
    }
}
