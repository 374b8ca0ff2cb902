//! The `json` plugin: lets a model pull what it needs out of a large JSON document
//! (RFC 9535 JSONPath `query`) and reshape a document step by step (`transform`
//! with RFC 6901 JSON Pointers: get, set, remove, pick, omit) instead of rewriting
//! JSON by hand, which is where models drop or invent fields.

pub mod pointer;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json_path::JsonPath;
use wasmhub_guest::Error;

/// Longest JSONPath expression accepted, in bytes.
pub const MAX_PATH_BYTES: usize = 1000;
/// Most results `query` returns in one call.
pub const MAX_RESULTS: u32 = 10_000;
/// Most steps in one `transform`.
pub const MAX_OPS: usize = 100;

/// A JSONPath query over a document.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryInput {
    /// The JSON document to query (any JSON value).
    pub document: Value,
    /// An RFC 9535 JSONPath expression, e.g. `$.store.book[?@.price < 10].title`,
    /// `$..author`, `$.items[-1]`, `$[?length(@.tags) > 2]`.
    #[schemars(length(min = 1, max = 1000))]
    pub path: String,
    /// Return at most this many results (default 100, at most 10000); `total` still
    /// counts them all.
    #[schemars(range(min = 1, max = 10000))]
    pub max_results: Option<u32>,
}

/// One node the path selected.
#[derive(Debug, Serialize, JsonSchema, PartialEq)]
pub struct QueryResult {
    /// Where the node is, as a normalized JSONPath (`$['store']['book'][0]`).
    pub path: String,
    /// Where the node is, as a JSON Pointer (`/store/book/0`), usable in `transform`.
    pub pointer: String,
    /// The node's value.
    pub value: Value,
}

/// The nodes selected, in document order.
#[derive(Debug, Serialize, JsonSchema, PartialEq)]
pub struct QueryOutput {
    /// The first `max_results` nodes.
    pub results: Vec<QueryResult>,
    /// How many nodes the path selected in all.
    pub total: u64,
    /// Whether `results` omits some.
    pub truncated: bool,
}

/// Runs a JSONPath query; a malformed path is `invalid-input` with its position.
pub fn query(input: QueryInput) -> Result<QueryOutput, Error> {
    if input.path.len() > MAX_PATH_BYTES {
        return Err(Error::invalid_input(format!(
            "path is longer than {MAX_PATH_BYTES} bytes"
        )));
    }
    let max = input.max_results.unwrap_or(100);
    if max == 0 || max > MAX_RESULTS {
        return Err(Error::invalid_input(format!(
            "max_results must be between 1 and {MAX_RESULTS}"
        )));
    }
    let path = JsonPath::parse(&input.path).map_err(|e| {
        Error::invalid_input(format!(
            "invalid JSONPath at position {}: {}",
            e.position(),
            e.message()
        ))
    })?;
    let nodes = path.query_located(&input.document);
    let total = nodes.len() as u64;
    let results: Vec<QueryResult> = nodes
        .iter()
        .take(max as usize)
        .map(|n| QueryResult {
            path: n.location().to_string(),
            pointer: n.location().to_json_pointer(),
            value: n.node().clone(),
        })
        .collect();
    Ok(QueryOutput {
        truncated: total > results.len() as u64,
        results,
        total,
    })
}

/// One step of a transform. Pointers are RFC 6901: `""` is the whole document,
/// `/a/0/b` a path through objects and arrays (`~1` escapes `/`, `~0` escapes `~`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Op {
    /// Replace the document with the value at `pointer` (narrow down to a part).
    Get {
        /// Where the value is.
        pointer: String,
    },
    /// Put `value` at `pointer`, replacing what is there. Missing parent objects are
    /// created; in an array, an index equal to its length or `-` appends.
    Set {
        /// Where to put the value.
        pointer: String,
        /// The value to put.
        value: Value,
    },
    /// Delete the value at `pointer` (an object member or an array element).
    Remove {
        /// What to delete.
        pointer: String,
    },
    /// Keep only `keys` in the object at `pointer`, or in every object of the array
    /// there (trim a list of records to the fields you need).
    Pick {
        /// Where the object or array is (default: the whole document).
        #[serde(default)]
        pointer: String,
        /// Member names to keep; names an object lacks are skipped.
        keys: Vec<String>,
    },
    /// Drop `keys` from the object at `pointer`, or from every object of the array there.
    Omit {
        /// Where the object or array is (default: the whole document).
        #[serde(default)]
        pointer: String,
        /// Member names to drop.
        keys: Vec<String>,
    },
}

/// A document and the steps to apply to it, in order.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TransformInput {
    /// The JSON document to transform (any JSON value).
    pub document: Value,
    /// The steps, applied in order, each to the result of the previous one (1 to 100).
    #[schemars(length(min = 1, max = 100))]
    pub ops: Vec<Op>,
}

/// The transformed document.
#[derive(Debug, Serialize, JsonSchema, PartialEq)]
pub struct TransformOutput {
    /// The document after every step.
    pub document: Value,
}

/// Applies the steps in order; an error names the step (1-based) that failed.
pub fn transform(input: TransformInput) -> Result<TransformOutput, Error> {
    if input.ops.is_empty() || input.ops.len() > MAX_OPS {
        return Err(Error::invalid_input(format!(
            "ops must have between 1 and {MAX_OPS} steps"
        )));
    }
    let mut doc = input.document;
    for (i, op) in input.ops.into_iter().enumerate() {
        doc = apply(doc, op).map_err(|e| match e {
            Error::InvalidInput(m) => Error::invalid_input(format!("ops[{i}]: {m}")),
            Error::NotFound(m) => Error::not_found(format!("ops[{i}]: {m}")),
            other => other,
        })?;
    }
    Ok(TransformOutput { document: doc })
}

fn apply(mut doc: Value, op: Op) -> Result<Value, Error> {
    match op {
        Op::Get { pointer } => {
            let tokens = pointer::parse(&pointer)?;
            pointer::take(doc, &tokens)
                .ok_or_else(|| Error::not_found(format!("nothing at pointer `{pointer}`")))
        }
        Op::Set { pointer, value } => {
            pointer::set(&mut doc, &pointer::parse(&pointer)?, value)?;
            Ok(doc)
        }
        Op::Remove { pointer } => {
            let tokens = pointer::parse(&pointer)?;
            if tokens.is_empty() {
                return Err(Error::invalid_input(
                    "cannot remove the whole document (pointer \"\")",
                ));
            }
            pointer::remove(&mut doc, &tokens)
                .ok_or_else(|| Error::not_found(format!("nothing at pointer `{pointer}`")))?;
            Ok(doc)
        }
        Op::Pick { pointer, keys } => {
            filter_keys(&mut doc, &pointer, |k| keys.iter().any(|w| w == k))?;
            Ok(doc)
        }
        Op::Omit { pointer, keys } => {
            filter_keys(&mut doc, &pointer, |k| !keys.iter().any(|w| w == k))?;
            Ok(doc)
        }
    }
}

fn filter_keys(doc: &mut Value, pointer: &str, keep: impl Fn(&str) -> bool) -> Result<(), Error> {
    let tokens = pointer::parse(pointer)?;
    let target = pointer::get_mut(doc, &tokens)
        .ok_or_else(|| Error::not_found(format!("nothing at pointer `{pointer}`")))?;
    match target {
        Value::Object(map) => map.retain(|k, _| keep(k)),
        Value::Array(items) => {
            for item in items {
                if let Value::Object(map) = item {
                    map.retain(|k, _| keep(k));
                }
            }
        }
        other => {
            return Err(Error::invalid_input(format!(
                "pick/omit need an object or an array of objects at `{pointer}`, found {}",
                pointer::kind(other)
            )));
        }
    }
    Ok(())
}

// The examples double as tests: `cargo test` runs each one (the macro's generated
// test), and so does the hub when it loads the component.
wasmhub_guest::export_plugin! {
    instructions: "Pass `document` as a JSON value (an object or array), not as a string holding JSON. \
        Use query to find things (RFC 9535 JSONPath, starting with `$`) and transform to reshape: every \
        query result carries a JSON Pointer (`/items/0/name`) that transform's steps accept. For a large \
        document, query or transform it here and read the small result instead of the whole document.",
    /// Select values from a JSON document with an RFC 9535 JSONPath expression (filters, wildcards, recursive descent).
    /// Returns each match with its location as a normalized path and a JSON Pointer.
    #[hints(read_only, idempotent)]
    #[example("Filters array items and returns where each match is",
        {"document": {"books": [{"title": "Dune", "price": 9.5}, {"title": "Emma", "price": 12}]},
         "path": "$.books[?@.price < 10].title"}
        => {"results": [{"path": "$['books'][0]['title']", "pointer": "/books/0/title", "value": "Dune"}],
            "total": 1, "truncated": false})]
    #[example("Recursive descent; max_results caps the list, total counts all",
        {"document": {"a": {"id": 1}, "b": [{"id": 2}, {"id": 3}]}, "path": "$..id", "max_results": 2}
        => {"results": [
                {"path": "$['a']['id']", "pointer": "/a/id", "value": 1},
                {"path": "$['b'][0]['id']", "pointer": "/b/0/id", "value": 2}
            ], "total": 3, "truncated": true})]
    query => query,
    /// Reshape a JSON document with a list of JSON Pointer steps: get (narrow to a part), set, remove,
    /// pick (keep only some keys, also across an array of records) and omit.
    #[hints(read_only, idempotent)]
    #[example("Narrows to a list of records and keeps two fields of each",
        {"document": {"data": {"users": [
            {"id": 1, "name": "Ada", "email": "ada@example.org"},
            {"id": 2, "name": "Bo", "email": "bo@example.org"}]}},
         "ops": [{"op": "get", "pointer": "/data/users"}, {"op": "pick", "keys": ["id", "name"]}]}
        => {"document": [{"id": 1, "name": "Ada"}, {"id": 2, "name": "Bo"}]})]
    #[example("Sets (creating parents), appends with `-` and removes",
        {"document": {"tags": ["a"], "draft": true},
         "ops": [{"op": "set", "pointer": "/meta/version", "value": 2},
                 {"op": "set", "pointer": "/tags/-", "value": "b"},
                 {"op": "remove", "pointer": "/draft"}]}
        => {"document": {"tags": ["a", "b"], "meta": {"version": 2}}})]
    transform => transform,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn store() -> Value {
        json!({
            "store": {
                "book": [
                    {"author": "Nigel Rees", "title": "Sayings of the Century", "price": 8.95},
                    {"author": "Evelyn Waugh", "title": "Sword of Honour", "price": 12.99},
                    {"author": "Herman Melville", "title": "Moby Dick", "price": 8.99, "isbn": "0-553-21311-3"}
                ],
                "bicycle": {"color": "red", "price": 399}
            },
            "id": 18446744073709551615u64
        })
    }

    fn q(path: &str, max: Option<u32>) -> Result<QueryOutput, Error> {
        query(QueryInput {
            document: store(),
            path: path.into(),
            max_results: max,
        })
    }

    #[test]
    fn query_selects_with_locations() {
        let out = q("$.store.book[?@.price < 10].title", None).unwrap();
        assert_eq!(out.total, 2);
        assert_eq!(
            out.results[0],
            QueryResult {
                path: "$['store']['book'][0]['title']".into(),
                pointer: "/store/book/0/title".into(),
                value: json!("Sayings of the Century"),
            }
        );
        assert_eq!(out.results[1].value, json!("Moby Dick"));
        let authors = q("$..author", Some(2)).unwrap();
        assert_eq!(
            (authors.results.len(), authors.total, authors.truncated),
            (2, 3, true)
        );
        assert_eq!(
            q("$.id", None).unwrap().results[0].value.as_u64(),
            Some(u64::MAX),
            "u64 kept exact"
        );
        assert_eq!(q("$.nothing", None).unwrap().total, 0);
    }

    #[test]
    fn query_rejects_bad_paths_and_limits() {
        let e = q("$.store[", None).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidInput(m) if m.starts_with("invalid JSONPath at position")),
            "{e}"
        );
        assert!(q("$", Some(0)).is_err());
        assert!(q(&format!("$.{}", "a".repeat(1000)), None).is_err());
    }

    fn t(doc: Value, ops: Value) -> Result<Value, Error> {
        let ops: Vec<Op> = serde_json::from_value(ops).unwrap();
        transform(TransformInput { document: doc, ops }).map(|o| o.document)
    }

    #[test]
    fn transform_steps_compose() {
        let out = t(
            store(),
            json!([
                {"op": "get", "pointer": "/store/book"},
                {"op": "pick", "keys": ["title", "price"]},
                {"op": "remove", "pointer": "/1"},
                {"op": "set", "pointer": "/-", "value": {"title": "New"}},
                {"op": "set", "pointer": "/0/meta/rating", "value": 5},
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!([
                {"title": "Sayings of the Century", "price": 8.95, "meta": {"rating": 5}},
                {"title": "Moby Dick", "price": 8.99},
                {"title": "New"}
            ])
        );
        let out = t(
            store(),
            json!([{"op": "omit", "pointer": "/store", "keys": ["book"]}]),
        )
        .unwrap();
        assert_eq!(out["store"], json!({"bicycle": {"color": "red", "price": 399}}));
        let out = t(
            json!({"a/b": {"~": 1}}),
            json!([{"op": "get", "pointer": "/a~1b/~0"}]),
        )
        .unwrap();
        assert_eq!(out, json!(1));
        let out = t(json!([1, 2]), json!([{"op": "set", "pointer": "/2", "value": 3}, {"op": "set", "pointer": "", "value": {"x": 1}}])).unwrap();
        assert_eq!(out, json!({"x": 1}));
    }

    #[test]
    fn transform_errors_name_the_step() {
        let e = t(
            store(),
            json!([{"op": "get", "pointer": "/store"}, {"op": "get", "pointer": "/nope"}]),
        )
        .unwrap_err();
        assert_eq!(e, Error::not_found("ops[1]: nothing at pointer `/nope`"));
        let e = t(store(), json!([{"op": "remove", "pointer": "store"}])).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidInput(m) if m.starts_with("ops[0]: a JSON Pointer must be empty or start with `/`")),
            "{e}"
        );
        let e = t(json!([1]), json!([{"op": "set", "pointer": "/5", "value": 0}])).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidInput(m) if m.contains("index 5")),
            "{e}"
        );
        let e = t(
            json!({"a": 1}),
            json!([{"op": "pick", "pointer": "/a", "keys": []}]),
        )
        .unwrap_err();
        assert!(
            matches!(&e, Error::InvalidInput(m) if m.contains("found a number")),
            "{e}"
        );
        assert!(t(json!(1), json!([{"op": "remove", "pointer": ""}])).is_err());
        assert!(t(json!(1), json!([])).is_err());
    }

    #[test]
    fn operations_decode_tagged_steps_through_the_sdk() {
        let p = wasmhub_plugin();
        let out = p
            .call_value(
                "transform",
                &json!({"document": {"a": {"b": 1}}, "ops": [{"op": "get", "pointer": "/a"}]}),
            )
            .unwrap();
        assert_eq!(out, json!({"document": {"b": 1}}));
        let e = p
            .call_value("transform", &json!({"document": {}, "ops": [{"op": "rename"}]}))
            .unwrap_err();
        assert!(
            matches!(&e, Error::InvalidInput(m) if m.starts_with("input.ops[0]") && m.contains("rename")),
            "{e}"
        );
    }

    #[test]
    fn every_operation_has_exact_examples_and_the_plugin_instructions() {
        let plugin = wasmhub_plugin();
        for op in plugin.operations() {
            assert!(
                (1..=3).contains(&op.examples().len()),
                "{}: 1 to 3 examples",
                op.name()
            );
            let exact = op.examples().iter().all(|e| e.output().is_some());
            assert!(
                exact && op.examples_run_at_load(),
                "{}: a pure operation's examples are exact",
                op.name()
            );
        }
        assert!(plugin.instructions().is_some_and(|i| i.contains("JSON Pointer")));
    }
}
