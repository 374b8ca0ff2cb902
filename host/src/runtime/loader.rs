//! Loading one `.wasm` file: size cap, digest, lock check, "is it a component",
//! (cached) compilation off the async threads, world and version check, linking,
//! the manifest, listing the operations in a sandbox, and validating every
//! operation name and JSON Schema. Every problem found is reported, each on its own
//! line with what to do about it; a bad file never affects other plugins.

use super::Inner;
use super::bindings::{OPERATIONS_EXPORT, OperationSpec, PluginPre, WitHints};
use super::cache::sha256_hex;
use super::lock::LockFile;
use super::manifest::{EffectiveLimits, Manifest};
use super::net::NetPolicy;
use super::plugin::{Hints, Operation, Plugin};
use super::sandbox::{CallState, SandboxSpec, new_store};
use super::types::NoNestedCalls;
use crate::config::Limits;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::Component;

/// Longest time `list` may take at load (a plugin's own time limit if shorter).
const LIST_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_NAME_LEN: usize = 64;

/// One reason a plugin cannot be loaded. Each displays as one line that says what
/// is wrong and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadProblem {
    /// The file could not be read.
    Read(String),
    /// The plugin name (file stem) is not `[a-z][a-z0-9_-]*`.
    BadName(String),
    /// Larger than `limits.max_plugin_mb`.
    TooLarge { size: u64, limit_mb: u64 },
    /// Does not start with the WebAssembly magic bytes.
    NotWasm,
    /// A core module, not a component.
    CoreModule,
    /// wasmtime could not compile it (truncated, corrupt, unsupported feature).
    Invalid(String),
    /// Does not export `wasmhub:plugin/operations@0.1.0`.
    WrongWorld { exports: Vec<String> },
    /// Imports something the host does not provide, or exports the interface with
    /// other types.
    Link(String),
    /// The capability manifest is invalid (one line per problem).
    Manifest(String),
    /// `operations.list` failed.
    List(String),
    /// An operation spec breaks a rule.
    Operation { op: String, problem: String },
    /// `--locked` and the file is not in `plugins.lock`.
    Unpinned,
    /// `--locked` and the file's digest differs from `plugins.lock`.
    DigestMismatch { expected: String, actual: String },
}

impl fmt::Display for LoadProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadProblem::Read(m) => write!(f, "cannot read the file: {m}"),
            LoadProblem::BadName(n) => write!(
                f,
                "plugin name {n:?} (the file name without .wasm) must match [a-z][a-z0-9_-]* and be at most \
                 {MAX_NAME_LEN} bytes: rename the file"
            ),
            LoadProblem::TooLarge { size, limit_mb } => write!(
                f,
                "the file is {:.1} MiB, above the limit of {limit_mb} MiB (limits.max_plugin_mb): \
                 shrink it or raise the limit",
                *size as f64 / (1 << 20) as f64
            ),
            LoadProblem::NotWasm => f.write_str(
                "not a WebAssembly file (it does not start with \\0asm): build the plugin for wasm32-wasip2",
            ),
            LoadProblem::CoreModule => f.write_str(
                "a core WebAssembly module, not a component: build with `--target wasm32-wasip2` (Rust) or wrap it \
                 with `wasm-tools component new`",
            ),
            LoadProblem::Invalid(m) => write!(f, "not a valid component ({m}): rebuild it; the file may be truncated"),
            LoadProblem::WrongWorld { exports } => {
                let found = if exports.is_empty() { "nothing".to_string() } else { exports.join(", ") };
                write!(
                    f,
                    "does not export {OPERATIONS_EXPORT} (it exports {found}): build it against the world \
                     `plugin` of wit/ (package wasmhub:plugin@0.1.0)"
                )
            }
            LoadProblem::Link(m) => write!(f, "cannot be linked: {m}"),
            LoadProblem::Manifest(m) => write!(f, "manifest: {m}"),
            LoadProblem::List(m) => write!(f, "operations.list failed: {m}"),
            LoadProblem::Operation { op, problem } => write!(f, "operation {op:?}: {problem}"),
            LoadProblem::Unpinned => {
                f.write_str("not pinned in plugins.lock (serve --locked): run `wasmhub plugin lock` to pin it")
            }
            LoadProblem::DigestMismatch { expected, actual } => write!(
                f,
                "sha256 {actual} differs from {expected} pinned in plugins.lock (serve --locked): \
                 restore the pinned file or run `wasmhub plugin lock` again"
            ),
        }
    }
}

/// Why a plugin was rejected: every problem found, one per line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    pub path: PathBuf,
    /// sha256 of the file when it could be read.
    pub digest: Option<String>,
    pub problems: Vec<LoadProblem>,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for LoadError {}

/// The plugin name of `path`: its file stem.
pub fn plugin_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

pub fn valid_plugin_name(name: &str) -> bool {
    let mut b = name.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_lowercase())
        && b.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-')
        && name.len() <= MAX_NAME_LEN
}

pub fn valid_operation_name(name: &str) -> bool {
    let mut b = name.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_lowercase())
        && b.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
        && name.len() <= MAX_NAME_LEN
}

/// The manifest path of a plugin: `NAME.toml` beside `NAME.wasm`.
pub fn manifest_path(wasm: &Path) -> PathBuf {
    wasm.with_extension("toml")
}

pub(super) async fn load(
    inner: &Arc<Inner>,
    path: &Path,
    lock: Option<&LockFile>,
) -> Result<Arc<Plugin>, LoadError> {
    let name = plugin_name(path);
    let mut err = LoadError {
        path: path.to_owned(),
        digest: None,
        problems: Vec::new(),
    };
    if !valid_plugin_name(&name) {
        err.problems.push(LoadProblem::BadName(name.clone()));
    }
    let file = match read_wasm(path, inner.limits.max_plugin_mb, lock, &mut err.digest).await {
        Ok(file) => file,
        Err(problem) => return Err(with(err, problem)),
    };
    let manifest = read_manifest(path, &mut err.problems);
    let (pre, imports) = match link(inner, &name, &file.digest, file.bytes).await {
        Ok(linked) => linked,
        Err(problem) => return Err(with(err, problem)),
    };
    if !err.problems.is_empty() {
        return Err(err);
    }

    let (sandbox, notes) = sandbox_spec(&manifest, &inner.limits);
    let specs = match list(inner, &pre, &sandbox, &name).await {
        Ok(specs) => specs,
        Err(m) => return Err(with(err, LoadProblem::List(m))),
    };
    let operations = validate_operations(specs, &mut err.problems);
    if !err.problems.is_empty() {
        return Err(err);
    }
    for note in &notes {
        crate::warn!("plugin {name}: {note}");
    }
    Ok(Arc::new(Plugin {
        name_arc: name.as_str().into(),
        name,
        digest: file.digest,
        size: file.size,
        path: path.to_owned(),
        operations,
        manifest,
        imports,
        notes,
        engine: inner.engine.clone(),
        _runtime: inner.clone(),
        pre,
        sandbox,
        max_instances: inner.limits.max_instances,
    }))
}

/// A `.wasm` file read whole, within the size cap.
struct WasmFile {
    bytes: Vec<u8>,
    size: u64,
    digest: String,
}

/// Reads the file, refusing it when it is too large, not pinned in `lock` (when
/// given), or not a component; `digest` is set as soon as the bytes are read.
async fn read_wasm(
    path: &Path,
    limit_mb: u64,
    lock: Option<&LockFile>,
    digest: &mut Option<String>,
) -> Result<WasmFile, LoadProblem> {
    let read = |e: std::io::Error| LoadProblem::Read(e.to_string());
    let size = tokio::fs::metadata(path).await.map_err(read)?.len();
    if size > limit_mb.saturating_mul(1 << 20) {
        return Err(LoadProblem::TooLarge { size, limit_mb });
    }
    let bytes = tokio::fs::read(path).await.map_err(read)?;
    let sha = sha256_hex(&bytes);
    *digest = Some(sha.clone());
    if let Some(lock) = lock {
        check_pinned(lock, path, &sha)?;
    }
    match bytes.get(..8) {
        Some([0, b'a', b's', b'm', 1, 0, 0, 0]) => Err(LoadProblem::CoreModule),
        Some([0, b'a', b's', b'm', ..]) => Ok(WasmFile {
            bytes,
            size,
            digest: sha,
        }),
        _ => Err(LoadProblem::NotWasm),
    }
}

/// `serve --locked`: the file must be pinned in `plugins.lock` with this digest.
fn check_pinned(lock: &LockFile, path: &Path, digest: &str) -> Result<(), LoadProblem> {
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    match lock.digest(&file) {
        None => Err(LoadProblem::Unpinned),
        Some(expected) if expected != digest => Err(LoadProblem::DigestMismatch {
            expected: expected.to_string(),
            actual: digest.to_string(),
        }),
        Some(_) => Ok(()),
    }
}

/// The manifest beside `path`; its problems are pushed (and the deny-all manifest
/// returned) so they are reported together with the component's.
fn read_manifest(path: &Path, problems: &mut Vec<LoadProblem>) -> Manifest {
    match Manifest::load(&manifest_path(path)) {
        Ok(m) => m,
        Err(e) => {
            problems.extend(
                e.problems
                    .iter()
                    .map(|p| LoadProblem::Manifest(format!("{}: {p}", e.path.display()))),
            );
            Manifest::default()
        }
    }
}

/// Compiles (or loads from the cache) the component, checks that it exports the
/// operations interface, and links it; returns its imports too.
async fn link(
    inner: &Arc<Inner>,
    name: &str,
    digest: &str,
    bytes: Vec<u8>,
) -> Result<(PluginPre<CallState>, Vec<String>), LoadProblem> {
    let component = compile(inner, name, digest, bytes)
        .await
        .map_err(LoadProblem::Invalid)?;
    let ty = component.component_type();
    let exports: Vec<String> = ty.exports(&inner.engine).map(|(n, _)| n.to_string()).collect();
    if !exports.iter().any(|e| e == OPERATIONS_EXPORT) {
        return Err(LoadProblem::WrongWorld { exports });
    }
    let imports: Vec<String> = ty.imports(&inner.engine).map(|(n, _)| n.to_string()).collect();
    let pre = inner
        .linker
        .instantiate_pre(&component)
        .and_then(PluginPre::new)
        .map_err(|e| LoadProblem::Link(link_message(&e)))?;
    Ok((pre, imports))
}

/// What the plugin's calls are granted: the manifest's grants, environment values
/// read now, limits clamped to the operator's caps; the notes say what was lowered
/// or is missing.
fn sandbox_spec(manifest: &Manifest, caps: &Limits) -> (SandboxSpec, Vec<String>) {
    let (limits, mut notes) = EffectiveLimits::resolve(&manifest.limits, caps);
    let mut env = Vec::new();
    for var in manifest.env_vars.iter().chain(&manifest.secrets) {
        match std::env::var(var) {
            Ok(value) => env.push((var.clone(), value)),
            Err(_) => notes.push(format!(
                "environment variable {var} is granted but not set on the host"
            )),
        }
    }
    let sandbox = SandboxSpec {
        env,
        dirs: manifest.dirs.clone(),
        net: Arc::new(NetPolicy::new(manifest.network.clone())),
        limits,
    };
    (sandbox, notes)
}

fn with(mut err: LoadError, problem: LoadProblem) -> LoadError {
    err.problems.push(problem);
    err
}

/// wasmtime's link errors name the missing import in the first line of the chain.
fn link_message(e: &wasmtime::Error) -> String {
    let chain: Vec<String> = e.chain().map(|c| c.to_string()).collect();
    let text = chain.join(": ");
    if text.contains("matching implementation was not found") {
        format!("{text} (the host provides WASI 0.2 and wasmhub:plugin/host@0.1.0 only)")
    } else {
        text
    }
}

/// The component for `bytes`: from the cache, or compiled on the blocking pool
/// (compiling has no timeout, so it never runs on the async threads).
async fn compile(inner: &Arc<Inner>, name: &str, digest: &str, bytes: Vec<u8>) -> Result<Component, String> {
    if let Some(cache) = &inner.cache {
        let (cache, engine, d) = (cache.clone(), inner.engine.clone(), digest.to_string());
        let hit = tokio::task::spawn_blocking(move || cache.get(&engine, &d))
            .await
            .ok()
            .flatten();
        if let Some(component) = hit {
            crate::debug!("plugin {name}: compiled code loaded from cache");
            return Ok(component);
        }
    }
    let started = Instant::now();
    let kib = bytes.len() / 1024;
    crate::info!("plugin {name}: compiling {kib} KiB...");
    let (engine, cache, d) = (inner.engine.clone(), inner.cache.clone(), digest.to_string());
    let compiled = tokio::task::spawn_blocking(move || -> Result<Component, String> {
        let artifact = engine.precompile_component(&bytes).map_err(|e| error_text(&e))?;
        if let Some(cache) = &cache {
            cache.put(&d, &artifact);
        }
        // SAFETY: `artifact` was produced just above by this engine's
        // `precompile_component`, which is what `deserialize` requires.
        unsafe { Component::deserialize(&engine, &artifact) }.map_err(|e| error_text(&e))
    })
    .await
    .map_err(|e| format!("compilation task failed: {e}"))??;
    crate::info!("plugin {name}: compiled in {} ms", started.elapsed().as_millis());
    Ok(compiled)
}

fn error_text(e: &wasmtime::Error) -> String {
    e.chain()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(": ")
        .replace('\n', " ")
}

/// Calls `operations.list` in a fresh sandbox with the plugin's own grants and
/// limits, and no nested calls.
async fn list(
    inner: &Arc<Inner>,
    pre: &PluginPre<CallState>,
    sandbox: &SandboxSpec,
    name: &str,
) -> Result<Vec<OperationSpec>, String> {
    let timeout = LIST_TIMEOUT.min(Duration::from_millis(sandbox.limits.timeout_ms));
    let deadline = tokio::time::Instant::now() + timeout;
    let state = CallState::new(
        sandbox,
        name.into(),
        "load".into(),
        deadline,
        Arc::new(NoNestedCalls),
    )
    .map_err(|e| e.to_string())?;
    let mut store = new_store(&inner.engine, state, &sandbox.limits);
    let run = async {
        let instance = pre.instantiate_async(&mut store).await?;
        instance.wasmhub_plugin_operations().call_list(&mut store).await
    };
    match tokio::time::timeout_at(deadline, run).await {
        Err(_) => Err(format!("did not return within {} ms", timeout.as_millis())),
        Ok(Err(e)) if store.data().limiter.hit => Err(format!(
            "hit the memory limit of {} MiB ({})",
            sandbox.limits.memory_mb,
            error_text(&e)
        )),
        Ok(Err(e)) => Err(error_text(&e)),
        Ok(Ok(specs)) => Ok(specs),
    }
}

/// Checks every spec, pushing one problem per broken rule; returns the operations
/// that passed.
fn validate_operations(specs: Vec<OperationSpec>, problems: &mut Vec<LoadProblem>) -> Vec<Operation> {
    let mut seen = std::collections::HashSet::new();
    let mut ops = Vec::new();
    if specs.is_empty() {
        problems.push(LoadProblem::List("the plugin lists no operations".into()));
    }
    for spec in specs {
        let mut bad = |problem: String| {
            problems.push(LoadProblem::Operation {
                op: spec.name.clone(),
                problem,
            })
        };
        if !valid_operation_name(&spec.name) {
            bad(format!(
                "the name must match [a-z][a-z0-9_]* and be at most {MAX_NAME_LEN} bytes"
            ));
            continue;
        }
        if !seen.insert(spec.name.clone()) {
            bad("the name is listed more than once; operation names must be unique".into());
            continue;
        }
        let input = compile_schema(&spec.input_schema, "input schema", true);
        let output = spec
            .output_schema
            .as_deref()
            .map(|s| compile_schema(s, "output schema", false));
        let (input_schema, input_validator) = match input {
            Ok(v) => v,
            Err(m) => {
                bad(m);
                continue;
            }
        };
        let (output_schema, output_validator) = match output.transpose() {
            Ok(v) => v.unzip(),
            Err(m) => {
                bad(m);
                continue;
            }
        };
        ops.push(Operation {
            name: spec.name,
            description: spec.description,
            input_schema,
            output_schema,
            hints: Hints {
                read_only: spec.hints.contains(WitHints::READ_ONLY),
                destructive: spec.hints.contains(WitHints::DESTRUCTIVE),
                idempotent: spec.hints.contains(WitHints::IDEMPOTENT),
                open_world: spec.hints.contains(WitHints::OPEN_WORLD),
            },
            input_validator,
            output_validator,
        });
    }
    ops
}

fn compile_schema(
    text: &str,
    what: &str,
    object_root: bool,
) -> Result<(serde_json::Value, Arc<jsonschema::Validator>), String> {
    let schema: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| format!("the {what} is not JSON ({e}): return JSON Schema text"))?;
    if object_root && schema.get("type").and_then(|t| t.as_str()) != Some("object") {
        return Err(format!(
            "the {what} must describe an object: its root needs \"type\": \"object\""
        ));
    }
    if let Err(e) = jsonschema::meta::validate(&schema) {
        let at = e.instance_path().to_string();
        let at = if at.is_empty() {
            String::new()
        } else {
            format!(" at {at}")
        };
        return Err(format!("the {what} is not valid JSON Schema{at}: {e}"));
    }
    let validator =
        jsonschema::validator_for(&schema).map_err(|e| format!("the {what} cannot be compiled: {e}"))?;
    Ok((schema, Arc::new(validator)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(valid_plugin_name("text"));
        assert!(valid_plugin_name("my-plugin_2"));
        assert!(!valid_plugin_name("Text"));
        assert!(!valid_plugin_name("2text"));
        assert!(!valid_plugin_name("te.xt"));
        assert!(!valid_plugin_name(""));
        assert!(valid_operation_name("slugify_v2"));
        assert!(!valid_operation_name("slug-ify"));
        assert!(!valid_operation_name(&"a".repeat(65)));
    }

    #[test]
    fn schemas_are_meta_validated() {
        assert!(compile_schema(r#"{"type":"object"}"#, "input schema", true).is_ok());
        let e = compile_schema(r#"{"type":12}"#, "input schema", true).unwrap_err();
        assert!(e.contains("root needs"), "{e}");
        let e = compile_schema(
            r#"{"type":"object","properties":{"a":{"type":12}}}"#,
            "input schema",
            true,
        )
        .unwrap_err();
        assert!(e.contains("not valid JSON Schema at /properties/a/type"), "{e}");
        let e = compile_schema(r#"{"type":"array"}"#, "input schema", true).unwrap_err();
        assert!(e.contains("must describe an object"), "{e}");
        let e = compile_schema("{nope", "output schema", false).unwrap_err();
        assert!(e.contains("not JSON"), "{e}");
        assert!(compile_schema(r#"{"minimum":"zero"}"#, "output schema", false).is_err());
    }
}
