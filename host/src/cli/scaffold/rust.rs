//! The Rust project of `plugin new --lang rust`: a crate with one working
//! operation on the `wasmhub-guest` SDK, which is vendored into the project
//! (`wasmhub-guest/`, with its own copy of the WIT) so it builds with cargo alone.
//! When the SDK is published, the path dependency can become a version.

use super::TemplateFile;

/// One file of the SDK's `src/`, as this binary was built with it.
macro_rules! sdk_source {
    ($file:literal) => {
        (
            concat!("wasmhub-guest/src/", $file),
            include_str!(concat!("../../../../guest-sdk/src/", $file)),
        )
    };
}

/// The SDK's sources (every file of `guest-sdk/src/`; a unit test keeps the list whole).
pub(super) const SDK_SOURCES: &[TemplateFile] = &[
    sdk_source!("check.rs"),
    sdk_source!("config.rs"),
    sdk_source!("error.rs"),
    sdk_source!("example.rs"),
    sdk_source!("host.rs"),
    sdk_source!("lib.rs"),
    sdk_source!("operation.rs"),
    sdk_source!("operation/tests.rs"),
    sdk_source!("schema.rs"),
    sdk_source!("secret.rs"),
];

/// The SDK's manifest; its `*.workspace = true` keys are filled in by
/// [`standalone_manifest`].
const SDK_MANIFEST: &str = include_str!("../../../../guest-sdk/Cargo.toml");

/// The workspace values the SDK's manifest inherits in this repository, as TOML.
const WORKSPACE_KEYS: &[(&str, &str)] = &[
    ("version", concat!("\"", env!("CARGO_PKG_VERSION"), "\"")),
    ("edition", "\"2024\""),
    ("license", "\"Apache-2.0\""),
    ("rust-version", "\"1.95\""),
];

/// Every file of a new Rust plugin crate.
pub(super) fn files() -> Vec<(&'static str, String)> {
    let wit = super::WitPaths {
        contract: "wasmhub-guest/wit/plugin.wit",
        config: "wasmhub-guest/wit/deps/config/store.wit",
    };
    let mut files = super::with_sdk(TEMPLATE, SDK_SOURCES, wit);
    files.push(("wasmhub-guest/Cargo.toml", standalone_manifest()));
    files
}

/// The crate's own files; `{{name}}` is filled in when they are written.
const TEMPLATE: &[TemplateFile] = &[
    ("Cargo.toml", CARGO_TOML),
    ("src/lib.rs", LIB_RS),
    ("README.md", README),
    (".gitignore", "/target\n"),
];

/// How to build and unit-test it, one command per line.
pub(super) fn build_steps(_name: &str) -> String {
    "rustup target add wasm32-wasip2   # once\n\
     cargo test                        # the logic and every example, natively\n\
     cargo build --release --target wasm32-wasip2"
        .to_string()
}

/// Where the build puts the component: cargo names it after the crate.
pub(super) fn wasm_path(name: &str) -> String {
    format!("target/wasm32-wasip2/release/{}.wasm", name.replace('-', "_"))
}

/// The SDK's manifest with each `KEY.workspace = true` written out, so the
/// vendored crate builds outside this repository's workspace.
pub(super) fn standalone_manifest() -> String {
    let mut out = String::new();
    for line in SDK_MANIFEST.lines() {
        let inherited = WORKSPACE_KEYS
            .iter()
            .find(|(key, _)| line.replace(' ', "") == format!("{key}.workspace=true"));
        match inherited {
            Some((key, value)) => out.push_str(&format!("{key} = {value}")),
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

const CARGO_TOML: &str = r#"[package]
name = "{{name}}"
version = "0.1.0"
edition = "2024"
publish = false

[lib]
# cdylib is the component; rlib lets `cargo test` run the logic natively.
crate-type = ["cdylib", "rlib"]

[dependencies]
# The SDK, vendored by `wasmhub plugin new` (the same version as the hub that wrote it).
wasmhub-guest = { path = "wasmhub-guest" }
schemars = "1.2"
serde = { version = "1", features = ["derive"] }
serde_json = "1"

# A workspace of its own, so the crate builds wherever it is placed.
[workspace]

# Small components load and compile faster in the hub.
[profile.release]
opt-level = "s"
lto = true
codegen-units = 1
strip = true
"#;

const README: &str = r#"# {{name}}

A wasmhub plugin written with the `wasmhub-guest` SDK. Each operation is a plain
function from a serde input type to a serde output type; doc comments become the
descriptions the model reads, and the JSON Schemas are derived from the types.

## Build, test, check

```sh
rustup target add wasm32-wasip2          # once
cargo test                               # the logic, the exported specs and every example, natively
cargo build --release --target wasm32-wasip2
wasmhub plugin check target/wasm32-wasip2/release/{{name_ident}}.wasm
wasmhub plugin test target/wasm32-wasip2/release/{{name_ident}}.wasm   # every example, in the sandbox
```

The SDK is in `wasmhub-guest/` (written by `wasmhub plugin new`, the version of the
hub that wrote it, with the contract in `wasmhub-guest/wit/plugin.wit`); its crate
docs (`cargo doc --open -p wasmhub-guest`) describe `export_plugin!`, examples and
instructions. Examples run when the hub loads the plugin (except those of operations
hinted `destructive` or `open_world`): a wrong expected output rejects the plugin.

## Run it in the hub

The plugin's name is the file stem, so copy the component under the name you want
models to see (`{{name}}.repeat`):

```sh
cp target/wasm32-wasip2/release/{{name_ident}}.wasm PLUGINS_DIR/{{name}}.wasm
wasmhub call {{name}}.repeat '{"text": "ab", "times": 3}' --plugins PLUGINS_DIR
```

The component runs in a deny-by-default sandbox: to reach the network, read a
directory or see environment variables, copy the capability manifest `{{name}}.toml`
beside `{{name}}.wasm` (see the hub's README). It shows a secret the hub injects into
requests to one host (the plugin never holds it; the operator sets it with
`wasmhub secret set {{name}} API_KEY`) and a configuration key, `separator`, which
`repeat` reads with `wasmhub_guest::config::get` when the input gives none (the
operator sets it in `[plugin.{{name}}] config` of the hub's TOML).
"#;

const LIB_RS: &str = r##"//! A wasmhub plugin. Add an operation: write a function from an input struct to an
//! output struct, then list it in `export_plugin!` with a doc comment.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wasmhub_guest::Error;

/// Longest result `repeat` builds, in bytes.
const MAX_OUTPUT: usize = 64 * 1024;

/// Text to repeat.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RepeatInput {
    /// The text to repeat.
    pub text: String,
    /// How many times (1 to 100).
    #[schemars(range(min = 1, max = 100))]
    pub times: u32,
    /// Put this between the copies (default: nothing).
    pub separator: Option<String>,
}

/// The repeated text.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RepeatOutput {
    /// `text` repeated `times` times.
    pub result: String,
}

pub fn repeat(input: RepeatInput) -> Result<RepeatOutput, Error> {
    if !(1..=100).contains(&input.times) {
        return Err(Error::invalid_input("times must be between 1 and 100"));
    }
    // The operator's `separator` ([config.separator] in {{name}}.toml) when the
    // input gives none; natively (`cargo test`) there is no configuration.
    let separator = match input.separator {
        Some(separator) => separator,
        None => wasmhub_guest::config::get("separator").ok().flatten().unwrap_or_default(),
    };
    let copies = vec![input.text.as_str(); input.times as usize];
    let result = copies.join(&separator);
    if result.len() > MAX_OUTPUT {
        return Err(Error::invalid_input(format!("the result would be longer than {MAX_OUTPUT} bytes")));
    }
    Ok(RepeatOutput { result })
}

wasmhub_guest::export_plugin! {
    instructions: "Texts are repeated exactly, separator only between the copies.",
    /// Repeat a text a number of times, optionally with a separator between the copies.
    #[hints(read_only, idempotent)]
    // Examples give every input that configuration could change: the hub runs them
    // at load with the operator's configuration.
    #[example("Repeats a text three times", {"text": "ab", "times": 3, "separator": ""} => {"result": "ababab"})]
    #[example("Puts the separator between the copies", {"text": "ab", "times": 2, "separator": "-"} => {"result": "ab-ab"})]
    repeat => repeat,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_with_a_separator() {
        let out = wasmhub_plugin().call("repeat", r#"{"text": "ab", "times": 3, "separator": "-"}"#).unwrap();
        assert_eq!(out, r#"{"result":"ab-ab-ab"}"#);
    }

    #[test]
    fn bad_input_is_reported_with_its_field() {
        let err = wasmhub_plugin().call("repeat", r#"{"text": "ab", "times": "3"}"#).unwrap_err();
        assert!(err.message().starts_with("input.times:"), "{err}");
        let err = repeat(RepeatInput { text: "x".repeat(1000), times: 100, separator: None }).unwrap_err();
        assert!(matches!(err, Error::InvalidInput(_)));
    }
}
"##;
