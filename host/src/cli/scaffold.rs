//! `wasmhub plugin new NAME`: writes a ready-to-build Rust plugin crate that uses
//! the `wasmhub-guest` SDK. Owns the template files, plugin-name validation and the
//! no-overwrite rule; the CLI only parses arguments and calls [`scaffold`].

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Why a plugin crate could not be scaffolded.
#[derive(Debug)]
pub enum ScaffoldError {
    /// The name is not a valid plugin name; the message says why.
    InvalidName {
        /// The name as given on the command line.
        name: String,
        /// What rule it breaks.
        reason: String,
    },
    /// The target directory already exists; nothing was written.
    Exists(PathBuf),
    /// Writing failed; whatever this call had created was removed.
    Io {
        /// The file or directory being written.
        path: PathBuf,
        /// The filesystem error.
        source: io::Error,
    },
}

impl fmt::Display for ScaffoldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScaffoldError::InvalidName { name, reason } => {
                write!(f, "invalid plugin name `{name}`: {reason}")
            }
            ScaffoldError::Exists(path) => {
                write!(
                    f,
                    "{} already exists; choose another name or remove it first",
                    path.display()
                )
            }
            ScaffoldError::Io { path, source } => write!(f, "cannot write {}: {source}", path.display()),
        }
    }
}

impl std::error::Error for ScaffoldError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ScaffoldError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Longest plugin name accepted, in bytes (it becomes the namespace models see).
pub const MAX_NAME_LEN: usize = 64;

/// Names cargo refuses as package names (Rust keywords and built-in crates) and the
/// template's own dependencies, which a package cannot share a name with.
const RESERVED: &[&str] = &[
    "as",
    "async",
    "await",
    "break",
    "const",
    "continue",
    "crate",
    "dyn",
    "else",
    "enum",
    "extern",
    "false",
    "fn",
    "for",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "match",
    "mod",
    "move",
    "mut",
    "pub",
    "ref",
    "return",
    "self",
    "static",
    "struct",
    "super",
    "trait",
    "true",
    "type",
    "unsafe",
    "use",
    "where",
    "while",
    "abstract",
    "become",
    "box",
    "do",
    "final",
    "gen",
    "macro",
    "override",
    "priv",
    "try",
    "typeof",
    "unsized",
    "virtual",
    "yield",
    "std",
    "core",
    "alloc",
    "test",
    "proc_macro",
    "proc-macro",
    "serde",
    "serde_json",
    "schemars",
    "wasmhub-guest",
    "wasmhub_guest",
];

/// Checks a plugin name: `[a-z][a-z0-9_-]*`, at most 64 bytes, not reserved.
pub fn validate_name(name: &str) -> Result<(), ScaffoldError> {
    let invalid = |reason: &str| ScaffoldError::InvalidName {
        name: name.to_string(),
        reason: reason.to_string(),
    };
    let mut bytes = name.bytes();
    match bytes.next() {
        None => return Err(invalid("the name is empty")),
        Some(b) if !b.is_ascii_lowercase() => {
            return Err(invalid("it must start with a lowercase letter a-z"));
        }
        Some(_) => {}
    }
    if !bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-') {
        return Err(invalid("use only a-z, 0-9, `_` and `-` ([a-z][a-z0-9_-]*)"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(invalid("it is longer than 64 bytes"));
    }
    if RESERVED.contains(&name) {
        return Err(invalid("it is a Rust keyword or a crate name cargo reserves"));
    }
    Ok(())
}

/// Writes a new plugin crate into `dest_dir/<name>` and returns the files written.
///
/// `sdk_path` is where the `wasmhub-guest` crate lives: absolute, or relative to the
/// new crate's directory (cargo resolves path dependencies that way). The crate has
/// its own empty `[workspace]`, so it builds wherever it is placed, including inside
/// another workspace's tree. An existing `dest_dir/<name>` is never touched.
pub fn scaffold(name: &str, dest_dir: &Path, sdk_path: &Path) -> Result<Vec<PathBuf>, ScaffoldError> {
    validate_name(name)?;
    let root = dest_dir.join(name);
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ScaffoldError::Io { path, source }
    };
    fs::create_dir_all(dest_dir).map_err(io_err(dest_dir))?;
    // create_dir (not _all) fails if the directory exists, even if it appeared after
    // a check: nothing of someone else's is ever overwritten.
    fs::create_dir(&root).map_err(|e| match e.kind() {
        io::ErrorKind::AlreadyExists => ScaffoldError::Exists(root.clone()),
        _ => ScaffoldError::Io {
            path: root.clone(),
            source: e,
        },
    })?;
    let files = [
        ("Cargo.toml", cargo_toml(name, sdk_path)),
        ("src/lib.rs", LIB_RS.to_string()),
        ("README.md", readme(name)),
        (".gitignore", "/target\n".to_string()),
    ];
    let mut written = Vec::new();
    for (relative, contents) in files {
        let path = root.join(relative);
        let result = path
            .parent()
            .map_or(Ok(()), fs::create_dir_all)
            .and_then(|()| fs::write(&path, contents));
        if let Err(source) = result {
            // Leave no half-written crate behind: the directory is ours, we just made it.
            let _ = fs::remove_dir_all(&root);
            return Err(ScaffoldError::Io { path, source });
        }
        written.push(path);
    }
    Ok(written)
}

/// A TOML basic string holding `s`.
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn cargo_toml(name: &str, sdk_path: &Path) -> String {
    format!(
        r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"
publish = false

[lib]
# cdylib is the component; rlib lets `cargo test` run the logic natively.
crate-type = ["cdylib", "rlib"]

[dependencies]
wasmhub-guest = {{ path = {sdk} }}
schemars = "1.2"
serde = {{ version = "1", features = ["derive"] }}
serde_json = "1"

# A workspace of its own, so the crate builds wherever it is placed.
[workspace]

# Small components load and compile faster in the hub.
[profile.release]
opt-level = "s"
lto = true
codegen-units = 1
strip = true
"#,
        sdk = toml_string(&sdk_path.to_string_lossy()),
    )
}

fn readme(name: &str) -> String {
    let artifact = name.replace('-', "_");
    format!(
        r#"# {name}

A wasmhub plugin written with the `wasmhub-guest` SDK. Each operation is a plain
function from a serde input type to a serde output type; doc comments become the
descriptions the model reads, and the JSON Schemas are derived from the types.

## Build, test, check

```sh
rustup target add wasm32-wasip2          # once
cargo test                               # logic and the exported specs, natively
cargo build --release --target wasm32-wasip2
wasmhub plugin check target/wasm32-wasip2/release/{artifact}.wasm
```

## Run it in the hub

The plugin's name is the file stem, so copy the component under the name you want
models to see (`{name}.repeat`):

```sh
cp target/wasm32-wasip2/release/{artifact}.wasm PLUGINS_DIR/{name}.wasm
wasmhub call {name}.repeat '{{"text": "ab", "times": 3}}' --plugins PLUGINS_DIR
```

The component runs in a deny-by-default sandbox: to reach the network, read a
directory or see environment variables, put a capability manifest `{name}.toml`
beside `{name}.wasm` (see the hub's README).
"#
    )
}

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
    let separator = input.separator.unwrap_or_default();
    let copies = vec![input.text.as_str(); input.times as usize];
    let result = copies.join(&separator);
    if result.len() > MAX_OUTPUT {
        return Err(Error::invalid_input(format!("the result would be longer than {MAX_OUTPUT} bytes")));
    }
    Ok(RepeatOutput { result })
}

wasmhub_guest::export_plugin! {
    /// Repeat a text a number of times, optionally with a separator between the copies.
    #[hints(read_only, idempotent)]
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_dir::TempDir;

    /// A fresh directory under the system temp dir, removed when dropped.
    fn temp_dir(tag: &str) -> TempDir {
        TempDir::new(&format!("wasmhub-scaffold-{tag}"))
    }

    #[test]
    fn names_follow_the_plugin_rule() {
        for good in ["a", "weather", "my-plugin", "x_1", &"a".repeat(64)] {
            assert!(validate_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "Weather",
            "1x",
            "-x",
            "_x",
            "a.b",
            "a b",
            "ü",
            "fn",
            "test",
            "serde",
            &"a".repeat(65),
        ] {
            let err = validate_name(bad).unwrap_err();
            assert!(matches!(err, ScaffoldError::InvalidName { .. }), "{bad:?}");
            assert!(
                err.to_string()
                    .starts_with(&format!("invalid plugin name `{bad}`"))
            );
        }
    }

    #[test]
    fn writes_a_standalone_crate() {
        let tmp = temp_dir("writes");
        let files = scaffold("my-tool", tmp.path(), Path::new("/opt/wasmhub/guest-sdk")).unwrap();
        let root = tmp.path().join("my-tool");
        let expected: Vec<PathBuf> = ["Cargo.toml", "src/lib.rs", "README.md", ".gitignore"]
            .iter()
            .map(|f| root.join(f))
            .collect();
        assert_eq!(files, expected);
        let cargo = fs::read_to_string(root.join("Cargo.toml")).unwrap();
        assert!(cargo.contains("name = \"my-tool\""));
        assert!(cargo.contains("wasmhub-guest = { path = \"/opt/wasmhub/guest-sdk\" }"));
        assert!(cargo.contains("\n[workspace]\n"), "its own workspace table");
        assert!(cargo.contains("crate-type = [\"cdylib\", \"rlib\"]"));
        let lib = fs::read_to_string(root.join("src/lib.rs")).unwrap();
        assert!(lib.contains("wasmhub_guest::export_plugin!"));
        let readme = fs::read_to_string(root.join("README.md")).unwrap();
        assert!(readme.contains("cargo build --release --target wasm32-wasip2"));
        assert!(
            readme.contains("release/my_tool.wasm PLUGINS_DIR/my-tool.wasm"),
            "artifact name vs plugin name"
        );
        assert_eq!(fs::read_to_string(root.join(".gitignore")).unwrap(), "/target\n");
    }

    #[test]
    fn never_overwrites() {
        let tmp = temp_dir("exists");
        let root = tmp.path().join("taken");
        fs::create_dir_all(&root).unwrap();
        fs::write(root.join("keep.txt"), "mine").unwrap();
        let err = scaffold("taken", tmp.path(), Path::new("../guest-sdk")).unwrap_err();
        assert!(matches!(&err, ScaffoldError::Exists(p) if *p == root), "{err}");
        assert_eq!(fs::read_to_string(root.join("keep.txt")).unwrap(), "mine");
        assert!(!root.join("Cargo.toml").exists());
        // A bad name writes nothing at all.
        assert!(scaffold("Bad", tmp.path(), Path::new("x")).is_err());
        assert!(!tmp.path().join("Bad").exists());
    }

    #[test]
    fn creates_missing_parents_and_escapes_the_sdk_path() {
        let tmp = temp_dir("escape");
        let dest = tmp.path().join("a").join("b");
        scaffold("p", &dest, Path::new(r#"C:\sdk "x""#)).unwrap();
        let cargo = fs::read_to_string(dest.join("p/Cargo.toml")).unwrap();
        assert!(
            cargo.contains(r#"wasmhub-guest = { path = "C:\\sdk \"x\"" }"#),
            "{cargo}"
        );
        assert_eq!(toml_string("a\u{1}b"), "\"a\\u0001b\"");
    }

    #[test]
    fn io_failures_name_the_path() {
        let tmp = temp_dir("io");
        let blocker = tmp.path().join("file");
        fs::write(&blocker, "not a directory").unwrap();
        let err = scaffold("p", &blocker, Path::new("x")).unwrap_err();
        assert!(
            matches!(&err, ScaffoldError::Io { path, .. } if *path == blocker),
            "{err}"
        );
        assert!(std::error::Error::source(&err).is_some());
    }
}
