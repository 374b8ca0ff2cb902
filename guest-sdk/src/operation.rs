//! Operations and their dispatch: typed handlers wrapped into JSON-in/JSON-out calls,
//! operation-name rules, the checks `list` relies on, and running the examples.

use schemars::JsonSchema;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::bindings::wasmhub::plugin::types::{Hints, OperationSpec};
use crate::check::{CheckError, MAX_INSTRUCTIONS_BYTES};
use crate::example::{Example, ExampleProblem};
use crate::{Error, schema};

/// Longest operation name the WIT contract allows, in bytes.
pub const MAX_NAME_LEN: usize = 64;

/// Why `name` is not a valid operation name (`[a-z][a-z0-9_]*`, at most 64 bytes),
/// or `None` when it is. `const` so that [`export_plugin!`](crate::export_plugin)
/// rejects a bad name at compile time.
pub const fn name_problem(name: &str) -> Option<&'static str> {
    let b = name.as_bytes();
    if b.is_empty() {
        return Some("operation name is empty");
    }
    if b.len() > MAX_NAME_LEN {
        return Some("operation name is longer than 64 bytes");
    }
    if !b[0].is_ascii_lowercase() {
        return Some("operation name must start with a lowercase ASCII letter ([a-z][a-z0-9_]*)");
    }
    let mut i = 1;
    while i < b.len() {
        let c = b[i];
        if !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_') {
            return Some("operation name may only contain a-z, 0-9 and _ ([a-z][a-z0-9_]*)");
        }
        i += 1;
    }
    None
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The first problem with a plugin's list of operation names: an invalid name or a
/// duplicate. `const` for the compile-time check of [`export_plugin!`](crate::export_plugin).
pub const fn names_problem(names: &[&str]) -> Option<&'static str> {
    if names.is_empty() {
        return Some("a plugin must export at least one operation");
    }
    let mut i = 0;
    while i < names.len() {
        if let Some(p) = name_problem(names[i]) {
            return Some(p);
        }
        let mut j = 0;
        while j < i {
            if same(names[i], names[j]) {
                return Some("operation names must be unique within a plugin");
            }
            j += 1;
        }
        i += 1;
    }
    None
}

/// Panics (at compile time when used in a `const`) on the first bad name.
#[doc(hidden)]
pub const fn assert_names(names: &[&str]) {
    if let Some(problem) = names_problem(names) {
        panic!("{}", problem);
    }
}

/// The description written in doc comments: one string per `///` line, each with the
/// single space rustdoc leaves after `///` removed, joined by newlines and trimmed.
pub fn join_doc_lines(lines: &[&str]) -> String {
    let joined: Vec<&str> = lines
        .iter()
        .map(|l| l.strip_prefix(' ').unwrap_or(l).trim_end())
        .collect();
    joined.join("\n").trim().to_string()
}

/// Decodes an operation's input. A mismatch is the caller's fault, so it is
/// `invalid-input`, with the path of the offending field when there is one.
pub fn decode_input<I: DeserializeOwned>(input_json: &str) -> Result<I, Error> {
    let de = &mut serde_json::Deserializer::from_str(input_json);
    match serde_path_to_error::deserialize(de) {
        Ok(v) => Ok(v),
        Err(e) => {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if path.is_empty() || path == "." {
                Err(Error::invalid_input(format!("input: {inner}")))
            } else {
                Err(Error::invalid_input(format!("input.{path}: {inner}")))
            }
        }
    }
}

/// Encodes an operation's output. A failure here is the plugin's bug (a map with
/// non-string keys, a NaN is encoded as `null` by serde_json), hence `failed`.
pub fn encode_output<O: Serialize>(output: &O) -> Result<String, Error> {
    serde_json::to_string(output).map_err(|e| Error::failed(format!("could not encode the output: {e}")))
}

/// Whether an input decodes into the operation's input type, without running it.
fn decodes<I: DeserializeOwned>(input_json: &str) -> Result<(), Error> {
    decode_input::<I>(input_json).map(|_| ())
}

type Handler = Box<dyn Fn(&str) -> Result<String, Error>>;

/// One exported operation: its spec, its examples and its JSON-in/JSON-out handler.
pub struct Operation {
    name: &'static str,
    description: String,
    hints: Hints,
    input_schema: fn() -> Value,
    output_schema: fn() -> Option<Value>,
    decodes: fn(&str) -> Result<(), Error>,
    examples: Vec<Example>,
    handler: Handler,
}

impl Operation {
    /// Wraps a typed handler. `I` is decoded from the input JSON, `O` encoded to the
    /// output JSON, and both schemas are derived from the types.
    pub fn new<I, O, F>(name: &'static str, description: String, hints: Hints, handler: F) -> Self
    where
        I: DeserializeOwned + JsonSchema,
        O: Serialize + JsonSchema,
        F: Fn(I) -> Result<O, Error> + 'static,
    {
        Operation {
            name,
            description,
            hints,
            input_schema: schema::input_schema::<I>,
            output_schema: schema::output_schema::<O>,
            decodes: decodes::<I>,
            examples: Vec::new(),
            handler: Box::new(move |json| encode_output(&handler(decode_input::<I>(json)?)?)),
        }
    }

    /// The operation's name inside the plugin.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The description taken from the doc comments.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The derived input schema.
    pub fn input_schema(&self) -> Value {
        (self.input_schema)()
    }

    /// The derived output schema, if the output type constrains anything.
    pub fn output_schema(&self) -> Option<Value> {
        (self.output_schema)()
    }

    /// The behaviour hints.
    pub fn hints(&self) -> Hints {
        self.hints
    }

    /// The same operation with one more example (listed in the order added).
    pub fn with_example(mut self, example: Example) -> Self {
        self.examples.push(example);
        self
    }

    /// The worked examples, most typical first.
    pub fn examples(&self) -> &[Example] {
        &self.examples
    }

    /// Whether the host runs this operation's examples when it loads the plugin: not
    /// when it is hinted `destructive` or `open_world`, since loading must not act on
    /// the world or depend on it. [`Plugin::check`] follows the same rule natively
    /// (where the network and other host imports do not exist anyway).
    pub fn examples_run_at_load(&self) -> bool {
        !self.hints.intersects(Hints::DESTRUCTIVE | Hints::OPEN_WORLD)
    }

    /// The first malformed example (empty description, input not an object or too
    /// large): what `list` must not return.
    fn check_example_declarations(&self) -> Result<(), CheckError> {
        self.first_failing_example(|example| example.declaration_problem().map_or(Ok(()), Err))
    }

    /// The first example whose input does not decode or, when the examples run at
    /// load, whose call fails or returns another output than the expected one.
    fn check_examples(&self) -> Result<(), CheckError> {
        self.first_failing_example(|example| self.run_example(example))
    }

    fn first_failing_example(
        &self,
        check: impl Fn(&Example) -> Result<(), ExampleProblem>,
    ) -> Result<(), CheckError> {
        for (i, example) in self.examples.iter().enumerate() {
            check(example).map_err(|problem| CheckError::Example {
                operation: self.name.to_string(),
                index: i + 1,
                description: example.description().to_string(),
                problem,
            })?;
        }
        Ok(())
    }

    fn run_example(&self, example: &Example) -> Result<(), ExampleProblem> {
        let input = example.input().to_string();
        (self.decodes)(&input).map_err(ExampleProblem::InputRejected)?;
        if !self.examples_run_at_load() {
            return Ok(());
        }
        let output = (self.handler)(&input).map_err(ExampleProblem::CallFailed)?;
        example.judge(&output)
    }

    fn spec(&self) -> OperationSpec {
        OperationSpec {
            name: self.name.to_string(),
            description: self.description.clone(),
            input_schema: self.input_schema().to_string(),
            output_schema: self.output_schema().map(|s| s.to_string()),
            hints: self.hints,
            examples: self.examples.iter().map(Example::to_wit).collect(),
        }
    }
}

/// The operations of one plugin, as [`export_plugin!`](crate::export_plugin) builds them.
/// It is also how a plugin's own tests call it natively, through the exact path the
/// host uses (JSON text in, JSON text or a typed error out).
pub struct Plugin {
    operations: Vec<Operation>,
    instructions: Option<String>,
}

impl Plugin {
    /// A plugin offering `operations`, without instructions.
    pub fn new(operations: Vec<Operation>) -> Self {
        Plugin {
            operations,
            instructions: None,
        }
    }

    /// The same plugin with `instructions`: text a model reads once before it uses
    /// the plugin (conventions its operations share, which one to call first).
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// The operations, in declaration order.
    pub fn operations(&self) -> &[Operation] {
        &self.operations
    }

    /// The instructions, as `operations.instructions` returns them.
    pub fn instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }

    /// Every problem the host would reject the plugin for: the declarations
    /// [`check_declarations`](Self::check_declarations) covers, then every example run
    /// natively through [`call`](Self::call) (those the host runs at load; the others
    /// only have their input decoded), its output compared with the expected one.
    pub fn check(&self) -> Result<(), CheckError> {
        self.check_declarations()?;
        self.operations.iter().try_for_each(Operation::check_examples)
    }

    /// The problems visible without running anything: bad or duplicate names,
    /// missing descriptions, an input schema whose root is not an object, blank or
    /// too long instructions, and malformed examples.
    pub fn check_declarations(&self) -> Result<(), CheckError> {
        let names: Vec<&str> = self.operations.iter().map(|o| o.name).collect();
        if let Some(problem) = names_problem(&names) {
            let names = names.iter().map(|n| n.to_string()).collect();
            return Err(CheckError::Names { problem, names });
        }
        self.check_instructions()?;
        for op in &self.operations {
            if op.description.is_empty() {
                return Err(CheckError::Undocumented {
                    operation: op.name.to_string(),
                });
            }
            let schema = op.input_schema();
            if !schema::root_is_object(&schema) {
                let operation = op.name.to_string();
                return Err(CheckError::InputNotObject { operation, schema });
            }
            op.check_example_declarations()?;
        }
        Ok(())
    }

    fn check_instructions(&self) -> Result<(), CheckError> {
        match self.instructions.as_deref() {
            Some(text) if text.trim().is_empty() => Err(CheckError::BlankInstructions),
            Some(text) if text.len() > MAX_INSTRUCTIONS_BYTES => {
                Err(CheckError::InstructionsTooLong { bytes: text.len() })
            }
            _ => Ok(()),
        }
    }

    /// The specs `operations.list` returns. Panics when
    /// [`check_declarations`](Self::check_declarations) fails: `list` cannot report an
    /// error, and a trap at load makes the host reject the plugin with this message
    /// rather than serve a broken one. (Examples are not run here: the host runs them
    /// itself, in the sandbox, after `list`.)
    pub fn specs(&self) -> Vec<OperationSpec> {
        if let Err(problem) = self.check_declarations() {
            panic!("invalid wasmhub plugin: {problem}");
        }
        self.operations.iter().map(Operation::spec).collect()
    }

    /// Runs operation `name` on `input_json`.
    pub fn call(&self, name: &str, input_json: &str) -> Result<String, Error> {
        match self.operations.iter().find(|o| o.name == name) {
            Some(op) => (op.handler)(input_json),
            None => {
                let known: Vec<&str> = self.operations.iter().map(|o| o.name).collect();
                Err(Error::not_found(format!(
                    "no operation `{name}` in this plugin (it has: {})",
                    known.join(", ")
                )))
            }
        }
    }

    /// [`call`](Self::call) with a serializable input and the output parsed back to a
    /// JSON value: convenient in tests.
    pub fn call_value<I: Serialize>(&self, name: &str, input: &I) -> Result<Value, Error> {
        let json = serde_json::to_string(input).map_err(|e| Error::invalid_input(e.to_string()))?;
        let out = self.call(name, &json)?;
        serde_json::from_str(&out).map_err(|e| Error::failed(format!("output is not JSON: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[test]
    fn name_rules() {
        for good in ["a", "eval", "list_units", "x9_", &"a".repeat(64)] {
            assert_eq!(name_problem(good), None, "{good}");
        }
        for bad in ["", "Eval", "9a", "_a", "a-b", "a.b", "é", "a b", &"a".repeat(65)] {
            assert!(name_problem(bad).is_some(), "{bad:?} should be rejected");
        }
        assert_eq!(names_problem(&["a", "b"]), None);
        assert_eq!(
            names_problem(&["a", "b", "a"]),
            Some("operation names must be unique within a plugin")
        );
        assert!(names_problem(&[]).is_some());
    }

    // The compile-time check really runs at compile time: this is evaluated by rustc.
    const _: () = assert_names(&["eval", "list_units"]);

    #[test]
    #[should_panic(expected = "unique")]
    fn assert_names_panics_on_duplicates() {
        assert_names(&["a", "a"]);
    }

    #[test]
    fn doc_lines_join_into_the_description() {
        assert_eq!(
            join_doc_lines(&[" First line.", " Second  ", "", " Third."]),
            "First line.\nSecond\n\nThird."
        );
        assert_eq!(join_doc_lines(&[]), "");
    }

    #[derive(Deserialize, Serialize, JsonSchema, Debug, PartialEq)]
    struct Wide {
        big: u64,
        small: i64,
        list: Vec<Item>,
    }

    #[derive(Deserialize, Serialize, JsonSchema, Debug, PartialEq)]
    struct Item {
        name: String,
    }

    #[test]
    fn extreme_64_bit_integers_round_trip_exactly() {
        let json = r#"{"big":18446744073709551615,"small":-9223372036854775808,"list":[]}"#;
        let decoded: Wide = decode_input(json).unwrap();
        assert_eq!(decoded.big, u64::MAX);
        assert_eq!(decoded.small, i64::MIN);
        let reencoded = encode_output(&decoded).unwrap();
        assert!(reencoded.contains("18446744073709551615") && reencoded.contains("-9223372036854775808"));
        assert_eq!(decode_input::<Wide>(&reencoded).unwrap(), decoded);
        // Through an untyped value too (what a plugin passing JSON along sees).
        let value: Value = decode_input(json).unwrap();
        assert_eq!(value["big"].as_u64(), Some(u64::MAX));
        let expected = r#"{"big":18446744073709551615,"list":[],"small":-9223372036854775808}"#;
        assert_eq!(
            encode_output(&value).unwrap(),
            expected,
            "same digits; a Value sorts its keys"
        );
    }

    #[test]
    fn decode_errors_are_invalid_input_with_the_field_path() {
        let e = decode_input::<Wide>(r#"{"big":1,"small":2,"list":[{"name":"a"},{"name":7}]}"#).unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)));
        assert!(
            e.message()
                .starts_with("input.list[1].name: invalid type: integer `7`"),
            "{e}"
        );

        let e = decode_input::<Wide>(r#"{"big":-1,"small":2,"list":[]}"#).unwrap_err();
        assert!(
            e.message().starts_with("input.big: invalid value: integer `-1`"),
            "{e}"
        );

        let e = decode_input::<Wide>(r#"{"big":18446744073709551616,"small":0,"list":[]}"#).unwrap_err();
        assert!(e.message().starts_with("input.big:"), "{e}");

        let e = decode_input::<Wide>(r#"{"small":2,"list":[]}"#).unwrap_err();
        assert!(e.message().starts_with("input: missing field `big`"), "{e}");

        let e = decode_input::<Wide>("not json").unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    }

    #[derive(Deserialize, JsonSchema)]
    struct Num {
        n: i64,
    }

    fn plugin() -> Plugin {
        Plugin::new(vec![
            Operation::new("double", "Doubles n.".into(), Hints::READ_ONLY, |i: Num| {
                i.n.checked_mul(2)
                    .map(|n| json!({ "n": n }))
                    .ok_or_else(|| Error::invalid_input("n is too large"))
            }),
            Operation::new(
                "fail",
                "Always fails.".into(),
                Hints::empty(),
                |_: Num| -> Result<Value, Error> { Err(Error::forbidden("no")) },
            ),
        ])
    }

    #[test]
    fn dispatch_maps_names_inputs_and_errors() {
        let p = plugin();
        assert_eq!(p.call("double", r#"{"n":21}"#).unwrap(), r#"{"n":42}"#);
        assert_eq!(p.call_value("double", &json!({"n": 4})).unwrap(), json!({"n": 8}));
        assert_eq!(
            p.call("double", &format!(r#"{{"n":{}}}"#, i64::MAX)),
            Err(Error::invalid_input("n is too large"))
        );
        assert_eq!(p.call("fail", r#"{"n":1}"#), Err(Error::forbidden("no")));
        let e = p.call("triple", "{}").unwrap_err();
        assert!(
            matches!(&e, Error::NotFound(m) if m.contains("double, fail")),
            "{e}"
        );
    }

    #[test]
    fn specs_carry_schemas_and_hints() {
        let specs = plugin().specs();
        assert_eq!(specs.len(), 2);
        assert_eq!(specs[0].name, "double");
        assert_eq!(specs[0].hints, Hints::READ_ONLY);
        let input: Value = serde_json::from_str(&specs[0].input_schema).unwrap();
        assert_eq!(input["properties"]["n"]["minimum"].as_i64(), Some(i64::MIN));
        assert_eq!(specs[0].output_schema, None, "a Value output declares no schema");
    }

    #[test]
    fn check_rejects_non_object_inputs_missing_docs_and_bad_names() {
        let scalar = Plugin::new(vec![Operation::new("s", "d".into(), Hints::empty(), |n: u32| {
            Ok(n)
        })]);
        assert!(
            scalar
                .check()
                .unwrap_err()
                .to_string()
                .contains("must serialize as a JSON object")
        );
        let undocumented = Plugin::new(vec![Operation::new(
            "s",
            String::new(),
            Hints::empty(),
            |n: Num| Ok(n.n),
        )]);
        assert!(
            undocumented
                .check()
                .unwrap_err()
                .to_string()
                .contains("no description")
        );
        let bad = Plugin::new(vec![Operation::new(
            "Bad",
            "d".into(),
            Hints::empty(),
            |n: Num| Ok(n.n),
        )]);
        assert!(bad.check().unwrap_err().to_string().contains("lowercase"));
    }

    #[test]
    #[should_panic(expected = "invalid wasmhub plugin")]
    fn specs_refuse_an_invalid_plugin() {
        Plugin::new(vec![Operation::new("s", "d".into(), Hints::empty(), |n: u32| {
            Ok(n)
        })])
        .specs();
    }

    fn double(examples: Vec<Example>) -> Plugin {
        let op = Operation::new("double", "Doubles n.".into(), Hints::READ_ONLY, |i: Num| {
            i.n.checked_mul(2)
                .map(|n| json!({ "n": n }))
                .ok_or_else(|| Error::invalid_input("n is too large"))
        });
        Plugin::new(vec![examples.into_iter().fold(op, Operation::with_example)])
    }

    fn example_failure(examples: Vec<Example>) -> (CheckError, String) {
        let e = double(examples).check().unwrap_err();
        let message = e.to_string();
        (e, message)
    }

    #[test]
    fn examples_that_hold_pass_check() {
        let p = double(vec![
            Example::new("Doubles 21", json!({"n": 21})).with_output(json!({"n": 42})),
            Example::new("Any output will do", json!({"n": -4})),
        ]);
        assert_eq!(p.check(), Ok(()));
        assert_eq!(p.operations()[0].examples().len(), 2);
    }

    #[test]
    fn an_example_whose_output_differs_fails_check_naming_it() {
        let (e, message) = example_failure(vec![
            Example::new("Doubles 21", json!({"n": 21})).with_output(json!({"n": 42})),
            Example::new("Doubles 2", json!({"n": 2})).with_output(json!({"n": 5})),
        ]);
        assert_eq!(
            message,
            r#"operation `double`, example 2 ("Doubles 2"): at /n: expected 5, got 4"#
        );
        assert!(matches!(
            e,
            CheckError::Example {
                index: 2,
                problem: ExampleProblem::OutputDiffers(_),
                ..
            }
        ));
        let (_, message) = example_failure(vec![
            Example::new("Float", json!({"n": 1})).with_output(json!({"n": 2.0})),
        ]);
        assert!(message.ends_with("at /n: expected 2.0, got 2"), "{message}");
    }

    #[test]
    fn an_example_that_fails_or_does_not_decode_fails_check() {
        let (e, message) = example_failure(vec![Example::new("Too large", json!({"n": i64::MAX}))]);
        assert_eq!(
            e,
            CheckError::Example {
                operation: "double".into(),
                index: 1,
                description: "Too large".into(),
                problem: ExampleProblem::CallFailed(Error::invalid_input("n is too large")),
            }
        );
        assert!(message.contains("an example must succeed"), "{message}");
        let (_, message) = example_failure(vec![Example::new("Typo", json!({"m": 1}))]);
        assert_eq!(
            message,
            r#"operation `double`, example 1 ("Typo"): its input does not decode: invalid-input: input: missing field `n` at line 1 column 7"#
        );
    }

    #[test]
    fn malformed_examples_are_declaration_errors_that_list_refuses() {
        let p = double(vec![Example::new("Not an object", json!([21]))]);
        let e = p.check_declarations().unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"operation `double`, example 1 ("Not an object"): its input is not a JSON object"#
        );
        let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| p.specs()));
        assert!(
            refused.is_err(),
            "list must trap rather than return a malformed example"
        );
        assert!(
            double(vec![Example::new("", json!({"n": 1}))])
                .check_declarations()
                .is_err()
        );
    }

    #[test]
    fn open_world_and_destructive_examples_are_decoded_but_not_run() {
        for hints in [Hints::OPEN_WORLD, Hints::DESTRUCTIVE | Hints::IDEMPOTENT] {
            let reaches_out = |_: Num| -> Result<Value, Error> { panic!("must not run at check") };
            let op = Operation::new("get", "Fetches.".into(), hints, reaches_out)
                .with_example(Example::new("Network", json!({"n": 1})));
            assert!(!op.examples_run_at_load());
            assert_eq!(Plugin::new(vec![op]).check(), Ok(()));
            let typo = Operation::new("get", "Fetches.".into(), hints, reaches_out)
                .with_example(Example::new("Typo", json!({"url": "x"})));
            let e = Plugin::new(vec![typo]).check().unwrap_err();
            assert!(matches!(
                e,
                CheckError::Example {
                    problem: ExampleProblem::InputRejected(_),
                    ..
                }
            ));
        }
        assert!(plugin().operations()[0].examples_run_at_load());
    }

    #[test]
    fn specs_carry_examples_as_json_text() {
        let p = double(vec![
            Example::new("Doubles 21", json!({"n": 21})).with_output(json!({"n": 42})),
            Example::new("Free", json!({"n": 1})),
        ]);
        let examples = &p.specs()[0].examples;
        assert_eq!(examples.len(), 2);
        assert_eq!(examples[0].description, "Doubles 21");
        assert_eq!(examples[0].input, r#"{"n":21}"#);
        assert_eq!(examples[0].output.as_deref(), Some(r#"{"n":42}"#));
        assert_eq!(examples[1].output, None);
        assert!(plugin().specs()[0].examples.is_empty());
    }

    #[test]
    fn instructions_are_optional_bounded_and_not_blank() {
        assert_eq!(plugin().instructions(), None);
        let p = plugin().with_instructions("Numbers are 64-bit.");
        assert_eq!(p.instructions(), Some("Numbers are 64-bit."));
        assert_eq!(p.check(), Ok(()));
        let blank = plugin().with_instructions(" \n");
        assert_eq!(blank.check_declarations(), Err(CheckError::BlankInstructions));
        let long = plugin().with_instructions("x".repeat(MAX_INSTRUCTIONS_BYTES + 1));
        assert_eq!(
            long.check(),
            Err(CheckError::InstructionsTooLong {
                bytes: MAX_INSTRUCTIONS_BYTES + 1
            })
        );
        let limit = plugin().with_instructions("x".repeat(MAX_INSTRUCTIONS_BYTES));
        assert_eq!(limit.check(), Ok(()));
    }
}
