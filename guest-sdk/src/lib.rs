//! # wasmhub-guest: write wasmhub plugins in Rust
//!
//! A plugin is a WebAssembly component of the `wasmhub:plugin@0.3.0` world. With this
//! crate its author writes plain functions from a serde input type to a serde output
//! type; the SDK derives both JSON Schemas (schemars, draft 2020-12, descriptions from
//! doc comments), decodes and encodes JSON, maps errors onto the WIT `error` variant
//! and exports the world with one macro, [`export_plugin!`], which also carries each
//! operation's worked examples and the plugin's instructions for the model.
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use wasmhub_guest::Error;
//!
//! /// Two numbers to add.
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! pub struct AddInput {
//!     /// The first addend.
//!     pub a: i64,
//!     /// The second addend.
//!     pub b: i64,
//! }
//!
//! /// The sum.
//! #[derive(Serialize, JsonSchema)]
//! pub struct AddOutput {
//!     pub sum: i64,
//! }
//!
//! pub fn add(input: AddInput) -> Result<AddOutput, Error> {
//!     let sum = input.a.checked_add(input.b).ok_or_else(|| Error::invalid_input("the sum overflows i64"))?;
//!     Ok(AddOutput { sum })
//! }
//!
//! wasmhub_guest::export_plugin! {
//!     instructions: "Integers are 64-bit and exact; a sum that does not fit is refused, never wrapped.",
//!     /// Add two 64-bit integers exactly; fails when the sum does not fit.
//!     #[hints(read_only, idempotent)]
//!     #[example("Adds two numbers", {"a": 2, "b": 40} => {"sum": 42})]
//!     #[example("Keeps every digit of a large sum", {"a": 9007199254740993i64, "b": 0} => {"sum": 9007199254740993i64})]
//!     add => add,
//! }
//!
//! // The same dispatch the host drives, callable natively from tests:
//! let out = wasmhub_plugin().call("add", r#"{"a": 2, "b": 40}"#).unwrap();
//! assert_eq!(out, r#"{"sum":42}"#);
//! let err = wasmhub_plugin().call("add", r#"{"a": "2", "b": 40}"#).unwrap_err();
//! assert!(err.message().starts_with("input.a: invalid type: string"));
//! // What `operations.list` and `operations.instructions` return:
//! let spec = &wasmhub_plugin().specs()[0];
//! assert_eq!(spec.examples[0].input, r#"{"a":2,"b":40}"#);
//! assert_eq!(spec.examples[0].output.as_deref(), Some(r#"{"sum":42}"#));
//! assert!(wasmhub_plugin().instructions().unwrap().starts_with("Integers are 64-bit"));
//! // Every example holds (the macro's generated #[test] asserts this too):
//! wasmhub_plugin().check().unwrap();
//! ```
//!
//! Build the component with `cargo build --release --target wasm32-wasip2` in a crate
//! with `crate-type = ["cdylib", "rlib"]`; the `.wasm` lands in
//! `target/wasm32-wasip2/release/`.
//!
//! ## The macro
//!
//! ```text
//! export_plugin! {
//!     instructions: "Text a model reads once.",                // optional, any &str/String expression
//!     /// Description for the model (doc comments, required).
//!     #[hints(read_only, destructive, idempotent, open_world)]   // optional, any subset
//!     #[example("What it shows", {"in": 1} => {"out": 2})]       // optional, repeatable: exact output
//!     #[example("What it shows", {"in": 1})]                     // output not fixed: must only succeed
//!     name => path::to::handler,                                 // fn(I) -> Result<O, Error>
//!     ...
//! }
//! ```
//!
//! The attributes come in this order: doc comments, `hints`, `example`s. `I:
//! DeserializeOwned + JsonSchema` must be a struct (the input root is a JSON object);
//! `O: Serialize + JsonSchema` (a `serde_json::Value` output declares no output
//! schema). Operation names must match `[a-z][a-z0-9_]*`, be at most 64 bytes and
//! unique: a bad name, a duplicate or a missing doc comment is a compile error. The
//! macro also defines `pub fn wasmhub_plugin() -> wasmhub_guest::Plugin` and a
//! `#[test]` that runs [`Plugin::check`], so `cargo test` catches what would make the
//! host reject the component. Invoke it once, at the crate root.
//!
//! ## Examples and instructions
//!
//! An example is a description, an input and optionally the expected output, written
//! as JSON literals (the `serde_json::json!` syntax: `{"n": 1}`, `[1, 2]`, `null`,
//! Rust expressions in values). Models see examples beside the schema; the host runs
//! them when it loads the plugin and rejects it if one fails. [`Plugin::check`] runs
//! them first, natively, through the same dispatch: the call must succeed and, when
//! an output is given, equal it as a JSON value (key order does not matter; `1` is
//! not `1.0`). As at the host, examples of operations hinted `destructive` or
//! `open_world` are not run (their inputs must still decode): give those no fixed
//! output. An example cannot show an error. The host also checks inputs and outputs
//! against the schemas, which the native check does not.
//!
//! `instructions` is plugin-level text for the model (shared conventions, units,
//! which operation to call first), at most 8 KiB; leave it out when the operation
//! descriptions say everything.
//!
//! ## Errors
//!
//! Return [`Error::invalid_input`], [`Error::not_found`], [`Error::forbidden`] or
//! [`Error::failed`]; they are the WIT `error` cases one for one. Input that does not
//! decode into `I` becomes `invalid-input` with the serde message and the field path
//! (`input.items[1].name: invalid type: ...`).
//!
//! ## 64-bit integers
//!
//! They travel as plain JSON integers and stay exact end to end: the host and this
//! SDK both parse with serde_json, which keeps every `i64`/`u64` digit. The derived
//! schema gives every sized integer its exact `minimum`/`maximum` and tells clients
//! of 64-bit fields that double-based JSON parsers (JavaScript) lose digits past
//! 2^53. See [`schema`].
//!
//! ## Calling the host
//!
//! [`host::log`] writes to the hub's log; [`host::call`] runs another operation
//! through the hub's call protocol (allowlist, deadline, cancellation, depth limit).
//! Neither exists natively, so examples of an operation that calls the host fail in
//! `cargo test`.
//!
//! ## The contract
//!
//! The crate carries its own copy of the WIT, `wit/plugin.wit` (`wasmhub:plugin@0.3.0`)
//! and `wit/deps/config/store.wit` (`wasi:config/store`, which the world imports), so
//! that it builds on its own (from crates.io, or vendored); in the wasmhub repository
//! a unit test keeps both identical to the repository's `wit/`.

extern crate self as wasmhub_guest;

mod check;
pub mod config;
mod error;
mod example;
pub mod host;
mod operation;
pub mod schema;
pub mod secret;

/// The generated WIT bindings of the `plugin` world (this crate's `wit/plugin.wit`).
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "plugin",
        pub_export_macro: true,
        export_macro_name: "__export_plugin_world",
        // `wasi:config/store`, which the world imports, lives in `wit/deps/`.
        generate_all,
        default_bindings_module: "wasmhub_guest::bindings",
        runtime_path: "wasmhub_guest::__private::wit_bindgen::rt",
        bitflags_path: "wasmhub_guest::__private::wit_bindgen::rt::bitflags",
    });
}

pub use bindings::wasmhub::plugin::types::Hints;
pub use check::{CheckError, MAX_INSTRUCTIONS_BYTES};
pub use error::Error;
pub use example::{Difference, Example, ExampleProblem, MAX_EXAMPLE_INPUT_BYTES, first_difference};
pub use operation::{
    MAX_NAME_LEN, Operation, Plugin, decode_input, encode_output, join_doc_lines, name_problem,
};

/// What [`export_plugin!`] expands to needs; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::bindings::__export_plugin_world as export;
    pub use crate::bindings::exports::wasmhub::plugin::operations::Guest;
    pub use crate::bindings::wasmhub::plugin::types::{Error as WitError, OperationSpec};
    pub use crate::operation::assert_names;
    pub use serde_json;
    pub use wit_bindgen;

    /// `#[hints(read_only, ...)]` names, spelled as in the attribute.
    #[allow(non_upper_case_globals)]
    pub mod hint {
        use crate::Hints;
        pub const read_only: Hints = Hints::READ_ONLY;
        pub const destructive: Hints = Hints::DESTRUCTIVE;
        pub const idempotent: Hints = Hints::IDEMPOTENT;
        pub const open_world: Hints = Hints::OPEN_WORLD;
    }

    /// Panics (at compile time, in a `const`) when an operation has no doc comment:
    /// the description is what the model reads and what search ranks on.
    pub const fn assert_documented(lines: &[&str]) {
        let mut i = 0;
        while i < lines.len() {
            let b = lines[i].as_bytes();
            let mut j = 0;
            while j < b.len() {
                if !b[j].is_ascii_whitespace() {
                    return;
                }
                j += 1;
            }
            i += 1;
        }
        panic!("every operation needs a doc comment: it is the description the model reads");
    }
}

/// Exports the `plugin` world from a list of operations, with their examples and
/// optional plugin instructions. See the [crate docs](crate) for the syntax and a
/// complete example.
///
/// Bad operation names are compile errors:
///
/// ```compile_fail
/// # #[derive(serde::Deserialize, schemars::JsonSchema)] pub struct In { x: u8 }
/// # pub fn f(i: In) -> Result<u8, wasmhub_guest::Error> { Ok(i.x) }
/// wasmhub_guest::export_plugin! {
///     /// Uppercase is not allowed.
///     Echo => f,
/// }
/// ```
///
/// So are duplicates:
///
/// ```compile_fail
/// # #[derive(serde::Deserialize, schemars::JsonSchema)] pub struct In { x: u8 }
/// # pub fn f(i: In) -> Result<u8, wasmhub_guest::Error> { Ok(i.x) }
/// wasmhub_guest::export_plugin! {
///     /// One.
///     echo => f,
///     /// Two.
///     echo => f,
/// }
/// ```
///
/// And operations without a doc comment:
///
/// ```compile_fail
/// # #[derive(serde::Deserialize, schemars::JsonSchema)] pub struct In { x: u8 }
/// # pub fn f(i: In) -> Result<u8, wasmhub_guest::Error> { Ok(i.x) }
/// wasmhub_guest::export_plugin! {
///     #[hints(read_only)]
///     echo => f,
/// }
/// ```
///
/// And an example before the hints (the order is docs, hints, examples):
///
/// ```compile_fail
/// # #[derive(serde::Deserialize, schemars::JsonSchema)] pub struct In { x: u8 }
/// # pub fn f(i: In) -> Result<u8, wasmhub_guest::Error> { Ok(i.x) }
/// wasmhub_guest::export_plugin! {
///     /// One.
///     #[example("Echoes", {"x": 7} => 7)]
///     #[hints(read_only)]
///     echo => f,
/// }
/// ```
///
/// The same declarations with valid names compile, and an operation may be called
/// `instructions`:
///
/// ```
/// # #[derive(serde::Deserialize, schemars::JsonSchema)] pub struct In { x: u8 }
/// # pub fn f(i: In) -> Result<u8, wasmhub_guest::Error> { Ok(i.x) }
/// wasmhub_guest::export_plugin! {
///     /// One.
///     #[hints(read_only)]
///     #[example("Echoes", {"x": 7} => 7)]
///     echo => f,
///     /// Two.
///     #[example("Echoes a computed value", {"x": u8::MAX})]
///     instructions => f,
/// }
/// assert_eq!(wasmhub_plugin().call("instructions", r#"{"x": 7}"#).unwrap(), "7");
/// assert_eq!(wasmhub_plugin().instructions(), None);
/// assert_eq!(wasmhub_plugin().specs()[1].examples[0].input, r#"{"x":255}"#);
/// ```
#[macro_export]
macro_rules! export_plugin {
    // Two entry arms, with and without instructions, forward to the `@plugin` arm,
    // which alone spells out the operation syntax. One arm cannot take both:
    // `instructions` would be ambiguous with an operation name (an `ident`). The
    // second entry arm matches only what starts like an operation, so a syntax error
    // fails in `@plugin` and rustc points at the offending token.
    (instructions: $instructions:expr, $($operations:tt)+) => {
        $crate::export_plugin! { @plugin [$instructions] $($operations)+ }
    };
    ($(#[$($attribute:tt)*])* $name:ident => $($rest:tt)*) => {
        $crate::export_plugin! { @plugin [] $(#[$($attribute)*])* $name => $($rest)* }
    };
    (@plugin [$($instructions:expr)?] $(
        $(#[doc = $doc:literal])*
        $(#[hints($($hint:ident),* $(,)?)])?
        $(#[example($example:literal, $input:tt $(=> $($output:tt)+)?)])*
        $name:ident => $handler:path
    ),+ $(,)?) => {
        const _: () = {
            $crate::__private::assert_names(&[$(stringify!($name)),+]);
            $($crate::__private::assert_documented(&[$($doc),*]);)+
        };

        /// This plugin's operations, as exported to the host; call
        /// `wasmhub_plugin().call(name, json)` in tests to run one natively.
        pub fn wasmhub_plugin() -> $crate::Plugin {
            $crate::Plugin::new(::std::vec![$(
                $crate::Operation::new(
                    stringify!($name),
                    $crate::join_doc_lines(&[$($doc),*]),
                    $crate::Hints::empty() $($(| $crate::__private::hint::$hint)*)?,
                    $handler,
                )
                $(.with_example(
                    $crate::Example::new($example, $crate::__private::serde_json::json!($input))
                        $(.with_output($crate::__private::serde_json::json!($($output)+)))?
                ))*
            ),+])
            $(.with_instructions($instructions))?
        }

        #[doc(hidden)]
        pub struct __WasmhubExports;

        impl $crate::__private::Guest for __WasmhubExports {
            fn list() -> ::std::vec::Vec<$crate::__private::OperationSpec> {
                wasmhub_plugin().specs()
            }

            fn call(
                name: ::std::string::String,
                input_json: ::std::string::String,
            ) -> ::std::result::Result<::std::string::String, $crate::__private::WitError> {
                wasmhub_plugin().call(&name, &input_json).map_err(::std::convert::Into::into)
            }

            fn instructions() -> ::std::option::Option<::std::string::String> {
                wasmhub_plugin().instructions().map(::std::string::String::from)
            }
        }

        // Only a wasm component exports the world: a native cdylib (built by `cargo
        // test` for `crate-type = ["cdylib", ...]`) cannot carry symbol names such as
        // `wasmhub:plugin/operations@0.3.0#list` through the linker's version script.
        #[cfg(target_arch = "wasm32")]
        $crate::__private::export!(__WasmhubExports with_types_in $crate::bindings);

        // Declarations and examples, natively: a wrong example fails `cargo test`
        // with the operation and the example named, before the host rejects it.
        #[cfg(test)]
        #[test]
        fn wasmhub_plugin_passes_check() {
            if let ::std::result::Result::Err(problem) = wasmhub_plugin().check() {
                panic!("{problem}");
            }
        }
    };
}

#[cfg(test)]
mod tests {

    use serde_json::{Value, json};

    use crate::__private::Guest;

    /// A plugin declared with every part of the syntax; its generated `#[test]`
    /// (`demo::wasmhub_plugin_passes_check`) runs its examples too.
    mod demo {
        use serde::Deserialize;
        use serde_json::{Value, json};

        #[derive(Deserialize, schemars::JsonSchema)]
        pub struct Items {
            items: Vec<i64>,
        }

        pub fn negate(input: Items) -> Result<Value, crate::Error> {
            Ok(json!(input.items.iter().map(|n| -n).collect::<Vec<_>>()))
        }

        pub fn first(input: Items) -> Result<Option<i64>, crate::Error> {
            Ok(input.items.first().copied())
        }

        crate::export_plugin! {
            instructions: concat!("Lists hold ", "64-bit integers."),
            /// Negates every item.
            #[hints(read_only, idempotent)]
            #[example("Negates a list", {"items": [1, -2]} => [-1, 2])]
            #[example("Keeps extremes exact", {"items": [i64::MAX]} => [-9223372036854775807i64])]
            negate => negate,
            /// The first item, or null.
            #[example("Takes the first", {"items": [7, 8]} => 7)]
            #[example("An empty list gives null", {"items": []} => null)]
            #[example("A negative first item", {"items": [-3]} => -3)]
            #[example("Any output", {"items": [1]})]
            first => first,
        }
    }

    #[test]
    fn the_macro_exports_examples_and_instructions() {
        let specs = demo::__WasmhubExports::list();
        let examples: Vec<(&str, &str, Option<&str>)> = specs
            .iter()
            .flat_map(|s| &s.examples)
            .map(|e| (e.description.as_str(), e.input.as_str(), e.output.as_deref()))
            .collect();
        assert_eq!(
            examples,
            [
                ("Negates a list", r#"{"items":[1,-2]}"#, Some("[-1,2]")),
                (
                    "Keeps extremes exact",
                    r#"{"items":[9223372036854775807]}"#,
                    Some("[-9223372036854775807]")
                ),
                ("Takes the first", r#"{"items":[7,8]}"#, Some("7")),
                ("An empty list gives null", r#"{"items":[]}"#, Some("null")),
                ("A negative first item", r#"{"items":[-3]}"#, Some("-3")),
                ("Any output", r#"{"items":[1]}"#, None),
            ]
        );
        assert_eq!(
            demo::__WasmhubExports::instructions().as_deref(),
            Some("Lists hold 64-bit integers.")
        );
        let out = demo::wasmhub_plugin()
            .call_value("negate", &json!({"items": [5]}))
            .unwrap();
        assert_eq!(out, Value::from(vec![-5]));
    }

    /// The SDK carries its own copy of the contract so that it builds from its
    /// packaged crate; inside the repository the copy must be the contract itself.
    #[test]
    fn the_wit_copy_is_the_repository_contract() {
        // The folder cargo runs the test in, not the one it was compiled in: a
        // build cache shared by two checkouts reuses this unchanged test binary.
        let crate_dir = std::path::PathBuf::from(
            std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR"),
        );
        let repository_wit = crate_dir.join("../wit");
        if !repository_wit.is_dir() {
            eprintln!(
                "note: not comparing wit/ with the repository's: {} does not exist \
                 (the crate is built outside the wasmhub repository)",
                repository_wit.display()
            );
            return;
        }
        for file in ["plugin.wit", "deps/config/store.wit"] {
            let copy = std::fs::read(crate_dir.join("wit").join(file)).expect("the SDK's copy");
            let contract = std::fs::read(repository_wit.join(file)).expect("the repository's file");
            assert!(
                copy == contract,
                "guest-sdk/wit/{file} differs from wit/{file}: copy it again \
                 (cp wit/{file} guest-sdk/wit/{file})"
            );
        }
    }
}
