//! # wasmhub-guest: write wasmhub plugins in Rust
//!
//! A plugin is a WebAssembly component of the `wasmhub:plugin@0.1.0` world. With this
//! crate its author writes plain functions from a serde input type to a serde output
//! type; the SDK derives both JSON Schemas (schemars, draft 2020-12, descriptions from
//! doc comments), decodes and encodes JSON, maps errors onto the WIT `error` variant
//! and exports the world with one macro, [`export_plugin!`].
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
//!     /// Add two 64-bit integers exactly; fails when the sum does not fit.
//!     #[hints(read_only, idempotent)]
//!     add => add,
//! }
//!
//! // The same dispatch the host drives, callable natively from tests:
//! let out = wasmhub_plugin().call("add", r#"{"a": 2, "b": 40}"#).unwrap();
//! assert_eq!(out, r#"{"sum":42}"#);
//! let err = wasmhub_plugin().call("add", r#"{"a": "2", "b": 40}"#).unwrap_err();
//! assert!(err.message().starts_with("input.a: invalid type: string"));
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
//!     /// Description for the model (doc comments, required).
//!     #[hints(read_only, destructive, idempotent, open_world)]   // optional, any subset
//!     name => path::to::handler,                                 // fn(I) -> Result<O, Error>
//!     ...
//! }
//! ```
//!
//! `I: DeserializeOwned + JsonSchema` must be a struct (the input root is a JSON
//! object); `O: Serialize + JsonSchema` (a `serde_json::Value` output declares no
//! output schema). Operation names must match `[a-z][a-z0-9_]*`, be at most 64 bytes
//! and unique: a bad name, a duplicate or a missing doc comment is a compile error.
//! The macro also defines `pub fn wasmhub_plugin() -> wasmhub_guest::Plugin` and a
//! `#[test]` that runs [`Plugin::check`] (input roots are objects), so `cargo test`
//! catches what would make the host reject the component. Invoke it once, at the
//! crate root.
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
//!
//! ## The contract
//!
//! The crate carries its own copy of the WIT, `wit/plugin.wit`, so that it builds on
//! its own (from crates.io, or vendored); in the wasmhub repository a unit test keeps
//! it identical to the repository's `wit/plugin.wit`.

extern crate self as wasmhub_guest;

mod error;
pub mod host;
mod operation;
pub mod schema;

/// The generated WIT bindings of the `plugin` world (this crate's `wit/plugin.wit`).
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "plugin",
        pub_export_macro: true,
        export_macro_name: "__export_plugin_world",
        default_bindings_module: "wasmhub_guest::bindings",
        runtime_path: "wasmhub_guest::__private::wit_bindgen::rt",
        bitflags_path: "wasmhub_guest::__private::wit_bindgen::rt::bitflags",
    });
}

pub use bindings::wasmhub::plugin::types::Hints;
pub use error::Error;
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

/// Exports the `plugin` world from a list of operations. See the [crate docs](crate)
/// for the syntax and a complete example.
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
/// The same declarations with valid names compile:
///
/// ```
/// # #[derive(serde::Deserialize, schemars::JsonSchema)] pub struct In { x: u8 }
/// # pub fn f(i: In) -> Result<u8, wasmhub_guest::Error> { Ok(i.x) }
/// wasmhub_guest::export_plugin! {
///     /// One.
///     #[hints(read_only)]
///     echo => f,
///     /// Two.
///     echo_again => f,
/// }
/// assert_eq!(wasmhub_plugin().call("echo_again", r#"{"x": 7}"#).unwrap(), "7");
/// ```
#[macro_export]
macro_rules! export_plugin {
    ($(
        $(#[doc = $doc:literal])*
        $(#[hints($($hint:ident),* $(,)?)])?
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
            ),+])
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
        }

        // Only a wasm component exports the world: a native cdylib (built by `cargo
        // test` for `crate-type = ["cdylib", ...]`) cannot carry symbol names such as
        // `wasmhub:plugin/operations@0.1.0#list` through the linker's version script.
        #[cfg(target_arch = "wasm32")]
        $crate::__private::export!(__WasmhubExports with_types_in $crate::bindings);

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
    use std::path::Path;

    /// The SDK carries its own copy of the contract so that it builds from its
    /// packaged crate; inside the repository the copy must be the contract itself.
    #[test]
    fn the_wit_copy_is_the_repository_contract() {
        let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let copy = std::fs::read(crate_dir.join("wit/plugin.wit")).expect("the SDK's wit/plugin.wit");
        let repository_wit = crate_dir.join("../wit");
        if !repository_wit.is_dir() {
            eprintln!(
                "note: not comparing wit/plugin.wit with the repository's: {} does not exist \
                 (the crate is built outside the wasmhub repository)",
                repository_wit.display()
            );
            return;
        }
        let contract =
            std::fs::read(repository_wit.join("plugin.wit")).expect("the repository's wit/plugin.wit");
        assert!(
            copy == contract,
            "guest-sdk/wit/plugin.wit differs from wit/plugin.wit: copy it again \
             (cp wit/plugin.wit guest-sdk/wit/plugin.wit)"
        );
    }
}
