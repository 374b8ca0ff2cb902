//! `wasmhub plugin new NAME --lang rust|python|js`: writes a plugin project that
//! builds with one documented command on a machine that has the `wasmhub` binary
//! and that language's toolchain, and no checkout of this repository: the SDK and
//! the WIT contract travel inside the binary, and each project gets its own copy
//! (`wit/plugin.wit` and the SDK beside the plugin's code). Owns the languages,
//! plugin-name validation, the placeholders and the no-overwrite rule; each
//! language's files live in its own module.

mod js;
mod python;
mod rust;

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The language of a new plugin project.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    /// Rust with the `wasmhub-guest` crate, built by cargo for wasm32-wasip2.
    Rust,
    /// Python with the `wasmhub_plugin` package, built by componentize-py.
    Python,
    /// JavaScript with the `wasmhub-plugin` module, built by componentize-js.
    Js,
}

impl Lang {
    /// The names `--lang` accepts.
    pub const NAMES: &str = "rust, python or js";

    /// The language `--lang` names (`rust`, `python`/`py`, `js`/`javascript`).
    pub fn parse(name: &str) -> Option<Lang> {
        match name {
            "rust" | "rs" => Some(Lang::Rust),
            "python" | "py" => Some(Lang::Python),
            "js" | "javascript" => Some(Lang::Js),
            _ => None,
        }
    }
}

/// A new project: where it is, what was written, and what to run next.
#[derive(Debug)]
pub struct Scaffolded {
    /// The project folder, `DEST/NAME`.
    pub root: PathBuf,
    /// Every file written, in order.
    pub files: Vec<PathBuf>,
    /// The commands to build, check, test and call it, one per line.
    pub next_steps: String,
}

/// One file of a template: its path inside the project and its contents, with
/// `{{name}}` (the plugin name) and `{{name_ident}}` (`-` turned into `_`) still
/// to be filled in.
type TemplateFile = (&'static str, &'static str);

/// Why a plugin project could not be scaffolded.
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

/// Writes a new `lang` plugin project into `dest_dir/<name>`. An existing
/// `dest_dir/<name>` is never touched; on a write failure whatever this call
/// created is removed.
pub fn scaffold(name: &str, dest_dir: &Path, lang: Lang) -> Result<Scaffolded, ScaffoldError> {
    validate_name(name)?;
    let root = dest_dir.join(name);
    fs::create_dir_all(dest_dir).map_err(|source| ScaffoldError::Io {
        path: dest_dir.to_path_buf(),
        source,
    })?;
    // create_dir (not _all) fails if the directory exists, even if it appeared after
    // a check: nothing of someone else's is ever overwritten.
    fs::create_dir(&root).map_err(|e| match e.kind() {
        io::ErrorKind::AlreadyExists => ScaffoldError::Exists(root.clone()),
        _ => ScaffoldError::Io {
            path: root.clone(),
            source: e,
        },
    })?;
    let (files, build_steps, wasm) = match lang {
        Lang::Rust => (rust::files(), rust::build_steps(name), rust::wasm_path(name)),
        Lang::Python => (python::files(), python::build_steps(name), format!("{name}.wasm")),
        Lang::Js => (js::files(), js::build_steps(name), format!("{name}.wasm")),
    };
    let next_steps = format!("{build_steps}\nwasmhub plugin check {wasm}\nwasmhub plugin test {wasm}");
    let mut written = Vec::new();
    for (relative, contents) in files {
        // A path may name the plugin too (`{{name}}.toml`).
        let path = root.join(fill(relative, name));
        let result = path
            .parent()
            .map_or(Ok(()), fs::create_dir_all)
            .and_then(|()| fs::write(&path, fill(&contents, name)));
        if let Err(source) = result {
            // Leave no half-written project behind: the directory is ours, we just made it.
            let _ = fs::remove_dir_all(&root);
            return Err(ScaffoldError::Io { path, source });
        }
        written.push(path);
    }
    Ok(Scaffolded {
        root,
        files: written,
        next_steps,
    })
}

/// The capability manifest every scaffold writes as `NAME.toml`: one secret the hub
/// injects (the plugin never holds it) and one configuration key.
pub(super) const MANIFEST: &str = r#"# Capability manifest: copy it beside the built {{name}}.wasm in the hub's plugins
# folder. Without it the plugin is pure compute: no network, no files, no environment.

[network]
allow = ["api.example.com"]                # the only host the plugin may reach

# A secret the operator supplies (`wasmhub secret set {{name}} API_KEY`, value on
# stdin). The hub adds it as a header to requests to the host below, after its
# network checks; the plugin never sees it, and a request elsewhere carries nothing.
[secrets.API_KEY]
description = "the api.example.com key"
inject = { host = "api.example.com", header = "Authorization", format = "Bearer {}" }

# Configuration the operator may set ([plugin.{{name}}] config = { separator = "-" }
# in the hub's TOML); the plugin reads it through wasi:config/store.
[config.separator]
type = "string"
default = ""
description = "what repeat puts between the copies when the input gives no separator"
"#;

/// Where a project keeps its WIT: the `wasmhub:plugin` contract, and the
/// `wasi:config/store` package its world imports (in `deps/`, where WIT tools find a
/// dependency).
pub(super) struct WitPaths {
    pub contract: &'static str,
    pub config: &'static str,
}

/// A project's files: its `template`, the `sdk` vendored beside it, the WIT
/// contract it binds against (the version the SDKs bind, `WitVersion::SDK`) and the
/// `wasi:config` package at `wit`, and its capability manifest `NAME.toml`
/// ([`MANIFEST`]).
fn with_sdk(template: &[TemplateFile], sdk: &[TemplateFile], wit: WitPaths) -> Vec<(&'static str, String)> {
    let contract = (wit.contract, crate::runtime::WitVersion::SDK.source());
    let config = (wit.config, crate::runtime::WASI_CONFIG_WIT);
    let manifest = ("{{name}}.toml", MANIFEST);
    template
        .iter()
        .chain(sdk)
        .chain([&contract, &config, &manifest])
        .map(|(path, text)| (*path, text.to_string()))
        .collect()
}

/// `template` with the placeholders filled in for plugin `name`.
fn fill(template: &str, name: &str) -> String {
    template
        .replace("{{name_ident}}", &name.replace('-', "_"))
        .replace("{{name}}", name)
}

#[cfg(test)]
mod tests;
