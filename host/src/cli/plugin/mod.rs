//! `wasmhub plugin check|inspect|test|lock|wit`: the plugin author's and operator's
//! view of what the runtime's loader decides about a file.
//!
//! `check` runs every loader check (the examples safe to run at load included) and
//! prints each problem on its own line with the fix; `inspect` shows digest, size,
//! WIT version, instructions, operations with schemas and examples, imports, limits
//! and what the manifest grants; `test` (in `test`) runs every example through the
//! sandbox; `lock` pins every plugin of a folder in `plugins.lock`; `wit` (in `wit`)
//! writes the WIT packages this binary serves; `oci` pulls, pushes and syncs plugins
//! from registries; `sign` makes keys and signatures.

mod oci;
mod sign;
mod test;
mod wit;

pub(crate) use oci::{OciFlags, describe as describe_pull, pull, push, sync, sync_sources};
pub(crate) use sign::{keygen, sign};
pub(crate) use test::test;
pub(crate) use wit::wit;

use crate::config::Limits;
use crate::hub::{SecretNeed, plugin_needs};
use crate::logging::Rfc3339;
use crate::runtime::secrets::SecretSource;
use crate::runtime::{LOCK_FILE, LoadError, LockFile, Plugin, Runtime, RuntimeError, Secrets};
use serde_json::{Value, json};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

/// Why `check` and `inspect` could not even try to load a file.
#[derive(Debug)]
enum StartError {
    /// The async runtime the loader runs on did not start.
    AsyncRuntime(std::io::Error),
    /// The wasmtime engine could not be built.
    Runtime(RuntimeError),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::AsyncRuntime(e) => write!(f, "cannot start the async runtime: {e}"),
            StartError::Runtime(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartError::AsyncRuntime(e) => Some(e),
            StartError::Runtime(e) => Some(e),
        }
    }
}

/// Loads `path` with the default global caps on a small runtime; the inner result
/// is the loader's verdict on the file.
fn load(path: &Path) -> Result<Result<Arc<Plugin>, LoadError>, StartError> {
    load_trusting(path, &crate::config::TrustConfig::default())
}

/// [`load`] under the `[trust]` policy `trust`.
fn load_trusting(
    path: &Path,
    trust: &crate::config::TrustConfig,
) -> Result<Result<Arc<Plugin>, LoadError>, StartError> {
    with_runtime_trusting(trust, |runtime| async move { runtime.load(path).await })
}

/// What `inspect` loads: the plugin under the configuration's `[trust]` and
/// `[plugin.NAME]`, and with its declared secrets' sources read from the
/// configured storage (`Err` says why they could not be: a running hub holds
/// the embedded data folder).
type Inspected = (Result<Arc<Plugin>, LoadError>, Result<Vec<SecretNeed>, String>);

fn load_inspected(path: &Path, config: &crate::config::Config) -> Result<Inspected, StartError> {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(StartError::AsyncRuntime)?;
    tokio.block_on(async {
        let store = match crate::storage::Backend::open(config).await {
            Ok(backend) => crate::runtime::secrets::store::open(&backend)
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        let secrets = Secrets::new(
            store.as_ref().ok().cloned(),
            &config.secrets,
            config.plugin.clone(),
        )
        .map_err(|e| StartError::Runtime(RuntimeError::Settings(e)))?;
        let runtime = Runtime::with_secrets(&Limits::default(), None, &config.trust, secrets)
            .map_err(StartError::Runtime)?;
        let loaded = runtime.load(path).await;
        let needs = match (&loaded, store) {
            (Ok(plugin), Ok(_)) => {
                let (mut needs, _) = plugin_needs(plugin);
                let names: Vec<&str> = needs.iter().map(|n| n.name.as_str()).collect();
                match runtime.secrets().sources(plugin.name(), &names).await {
                    Ok(sources) => {
                        for (need, source) in needs.iter_mut().zip(sources) {
                            need.source = Some(source);
                        }
                        Ok(needs)
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
            (_, Err(e)) => Err(e),
            (Err(_), Ok(_)) => Ok(Vec::new()),
        };
        Ok((loaded, needs))
    })
}

/// Where the plugin at `path` came from and who signed it: the source recorded in
/// the folder's `plugins.lock`, the verified signer, or the key id its signature
/// names when no `[trust]` key checked it.
pub fn provenance(path: &Path, plugin: Option<&Plugin>) -> Value {
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lock = path.parent().and_then(|dir| LockFile::read(dir).ok());
    let source = lock
        .as_ref()
        .and_then(|l| l.source(&file))
        .map(|s| json!({ "reference": s.reference, "manifest_digest": s.manifest_digest }));
    let claimed = std::fs::read(crate::runtime::signature_path(path))
        .ok()
        .and_then(|b| crate::runtime::Signature::parse(&b).ok())
        .map(|s| s.key_id);
    let signer = plugin.and_then(|p| p.signer());
    json!({
        "source": source,
        "signer": signer,
        "signature_key_id": claimed,
        "signature_verified": signer.is_some(),
    })
}

/// Runs `work` on a fresh plugin runtime with the default global caps, on a small
/// async runtime of its own.
fn with_runtime<T, F: Future<Output = T>>(work: impl FnOnce(Runtime) -> F) -> Result<T, StartError> {
    with_runtime_trusting(&crate::config::TrustConfig::default(), work)
}

/// [`with_runtime`] with the `[trust]` policy `trust`.
fn with_runtime_trusting<T, F: Future<Output = T>>(
    trust: &crate::config::TrustConfig,
    work: impl FnOnce(Runtime) -> F,
) -> Result<T, StartError> {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(StartError::AsyncRuntime)?;
    tokio.block_on(async {
        let runtime = Runtime::with_trust(&Limits::default(), None, trust).map_err(StartError::Runtime)?;
        Ok(work(runtime).await)
    })
}

/// `check`'s and `test`'s report of a file the loader refused: one `error:` line
/// per problem.
fn print_problems(path: &Path, e: &LoadError) {
    println!("{}: {} problem(s)", path.display(), e.problems.len());
    for p in &e.problems {
        println!("error: {p}");
    }
}

/// `wasmhub plugin check FILE`: exit 0 when the plugin would load, else 1 with one
/// `error:` line per problem.
pub fn check(path: &Path) -> ExitCode {
    match load(path) {
        Err(e) => {
            eprintln!("wasmhub plugin check: {e}");
            ExitCode::from(2)
        }
        Ok(Err(e)) => {
            print_problems(path, &e);
            ExitCode::from(1)
        }
        Ok(Ok(plugin)) => {
            println!(
                "{}: ok: plugin {} (wasmhub:plugin@{}) with {} operation(s): {}",
                path.display(),
                plugin.name(),
                plugin.wit_version(),
                plugin.operations().len(),
                plugin
                    .operations()
                    .iter()
                    .map(|o| o.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            for note in plugin.notes() {
                println!("note: {note}");
            }
            ExitCode::SUCCESS
        }
    }
}

fn hint_names(op: &crate::runtime::Operation) -> Vec<&'static str> {
    let h = &op.hints;
    [
        (h.read_only, "read-only"),
        (h.destructive, "destructive"),
        (h.idempotent, "idempotent"),
        (h.open_world, "open-world"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect()
}

/// Everything `inspect` shows, as JSON.
pub fn describe(plugin: &Plugin) -> Value {
    let l = plugin.limits();
    let m = plugin.manifest();
    json!({
        "name": plugin.name(),
        "path": plugin.path().display().to_string(),
        "sha256": plugin.digest(),
        "size": plugin.size(),
        "deprecated": plugin.deprecated(),
        "wit_version": plugin.wit_version(),
        "instructions": plugin.instructions(),
        "imports": plugin.imports(),
        "limits": {
            "memory_mb": l.memory_mb, "timeout_ms": l.timeout_ms, "output_kb": l.output_kb,
            "log_kb": l.log_kb, "input_kb": l.input_kb,
        },
        "manifest": m.path.as_ref().map(|p| p.display().to_string()),
        "grants": {
            "network": m.network.iter().map(|g| g.to_string()).collect::<Vec<_>>(),
            "dirs": m.dirs.iter().map(|d| json!({
                "host": d.host.display().to_string(), "guest": d.guest, "writable": d.writable,
            })).collect::<Vec<_>>(),
            "env": m.env_vars,
            "secrets": m.env_secrets,
        },
        "config": plugin.config().iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
        "notes": plugin.notes(),
        "provenance": provenance(plugin.path(), Some(plugin)),
        "operations": plugin.operations().iter().map(|o| json!({
            "name": o.name,
            "description": o.description,
            "hints": hint_names(o),
            "inputSchema": o.input_schema,
            "outputSchema": o.output_schema,
            "examples": o.examples,
        })).collect::<Vec<_>>(),
    })
}

/// `wasmhub plugin inspect FILE [--json]`, under the configuration's `[trust]`.
pub fn inspect(path: &Path, as_json: bool, config: &crate::config::Config) -> ExitCode {
    let (loaded, needs) = match load_inspected(path, config) {
        Ok(inspected) => inspected,
        Err(e) => {
            eprintln!("wasmhub plugin inspect: {e}");
            return ExitCode::from(2);
        }
    };
    let plugin = match loaded {
        Err(e) => {
            if as_json {
                let problems: Vec<String> = e.problems.iter().map(|p| p.to_string()).collect();
                println!(
                    "{}",
                    json!({ "path": path.display().to_string(), "sha256": e.digest, "problems": problems,
                            "provenance": provenance(path, None) })
                );
            } else {
                println!("{}: rejected", path.display());
                if let Some(d) = &e.digest {
                    println!("sha256:  {d}");
                }
                print_provenance(&provenance(path, None));
                for p in &e.problems {
                    println!("error: {p}");
                }
            }
            return ExitCode::from(1);
        }
        Ok(p) => p,
    };
    if as_json {
        let mut described = describe(&plugin);
        described["secrets"] = match &needs {
            Ok(needs) => json!(needs),
            Err(why) => json!({ "unknown": why }),
        };
        println!("{}", serde_json::to_string_pretty(&described).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    print_plugin(&plugin);
    print_needs(&plugin, &needs);
    ExitCode::SUCCESS
}

/// `inspect`'s `secrets:` and `config:` lines: what the operator supplies.
fn print_needs(plugin: &Plugin, needs: &Result<Vec<SecretNeed>, String>) {
    let (declared, config) = plugin_needs(plugin);
    if !declared.is_empty() {
        println!("secrets:");
    }
    for need in &declared {
        let state = match needs {
            Ok(needs) => match needs
                .iter()
                .find(|n| n.name == need.name)
                .and_then(|n| n.source.clone())
            {
                Some(SecretSource::Stored { updated_ms }) => format!("set (stored {})", Rfc3339(updated_ms)),
                Some(SecretSource::Reference { reference }) => format!("set (from {reference})"),
                _ => format!("UNSET: wasmhub secret set {} {}", plugin.name(), need.name),
            },
            Err(why) => format!("unknown ({why})"),
        };
        let how = match need.use_ {
            "inject" => format!("injected into {}", need.hosts.join(", ")),
            _ => "revealed to the plugin (needs plugin.NAME.allow_reveal)".into(),
        };
        println!("  {}: {state}; {how}; {}", need.name, need.description);
    }
    if !config.is_empty() {
        println!("config:");
    }
    for c in &config {
        let value = c
            .value
            .as_deref()
            .map_or("(not set)".to_string(), |v| format!("= {v:?}"));
        println!("  {} ({}) {value}; {}", c.name, c.ty, c.description);
    }
}

/// `inspect`'s `source:` and `signer:` lines.
fn print_provenance(p: &Value) {
    let source = &p["source"];
    if let Some(reference) = source["reference"].as_str() {
        println!(
            "source:  {reference} (manifest {})",
            source["manifest_digest"].as_str().unwrap_or("")
        );
    }
    match (p["signer"].as_str(), p["signature_key_id"].as_str()) {
        (Some(id), _) => println!("signer:  {id} (verified by [trust])"),
        (None, Some(id)) => {
            println!("signer:  {id} (claimed by NAME.wasm.sig; not verified: no [trust] keys)")
        }
        (None, None) => println!("signer:  none (unsigned)"),
    }
}

/// `inspect`'s human-readable report.
fn print_plugin(plugin: &Plugin) {
    let l = plugin.limits();
    println!(
        "plugin:  {}{}",
        plugin.name(),
        if plugin.deprecated() { " (deprecated)" } else { "" }
    );
    println!("file:    {}", plugin.path().display());
    println!("wit:     wasmhub:plugin@{}", plugin.wit_version());
    println!("sha256:  {}", plugin.digest());
    println!("size:    {} bytes", plugin.size());
    print_provenance(&provenance(plugin.path(), Some(plugin)));
    println!(
        "limits:  memory {} MiB, time {} ms, output {} KiB, logs {} KiB, input {} KiB",
        l.memory_mb, l.timeout_ms, l.output_kb, l.log_kb, l.input_kb
    );
    println!("grants:");
    for line in plugin.manifest().describe() {
        println!("  {line}");
    }
    for note in plugin.notes() {
        println!("  note: {note}");
    }
    println!("imports:");
    for i in plugin.imports() {
        println!("  {i}");
    }
    if let Some(text) = plugin.instructions() {
        println!("instructions:");
        for line in text.lines() {
            println!("  {line}");
        }
    }
    println!("operations:");
    for op in plugin.operations() {
        let hints = hint_names(op);
        let hints = if hints.is_empty() {
            String::new()
        } else {
            format!(" [{}]", hints.join(", "))
        };
        println!("  {}.{}{hints}", plugin.name(), op.name);
        println!("    {}", op.description);
        println!("    input:  {}", op.input_schema);
        if let Some(out) = &op.output_schema {
            println!("    output: {out}");
        }
        for (i, example) in op.examples.iter().enumerate() {
            let output = example
                .output
                .as_ref()
                .map_or("(not fixed)".to_string(), |o| o.to_string());
            println!("    example {}: {}", i + 1, example.description);
            println!("      {} -> {output}", example.input);
        }
    }
}

/// `wasmhub plugin lock DIR`: pins the sha256 of every `.wasm` in DIR, each within
/// `limits.max_plugin_mb` of `./wasmhub.toml` (the default without one).
pub fn lock(dir: &Path) -> ExitCode {
    let max_plugin_mb = match crate::config::Config::load(None) {
        Ok(config) => config.limits.load.max_plugin_mb,
        Err(e) => {
            eprintln!("wasmhub plugin lock: {e}");
            return ExitCode::from(1);
        }
    };
    let mut lock = match LockFile::from_dir_within(dir, max_plugin_mb) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("wasmhub plugin lock: {e}");
            return ExitCode::from(1);
        }
    };
    // Where pulled files came from stays recorded while their bytes are unchanged.
    if let Ok(earlier) = LockFile::read(dir) {
        lock.keep_sources_of(&earlier);
    }
    if let Err(e) = lock.write(dir) {
        eprintln!("wasmhub plugin lock: {e}");
        return ExitCode::from(1);
    }
    for (name, digest) in lock.entries() {
        println!("{digest}  {name}");
    }
    println!(
        "pinned {} plugin(s) in {}",
        lock.len(),
        dir.join(LOCK_FILE).display()
    );
    ExitCode::SUCCESS
}
