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
mod tests;
