//! Loading one `.wasm` file: size cap, digest, lock check, "is it a component",
//! (cached) compilation off the async threads, world and version check, linking,
//! the manifest, listing the operations in a sandbox, and validating every
//! operation name and JSON Schema. Every problem found is reported, each on its own
//! line with what to do about it; a bad file never affects other plugins.

use super::Inner;
use super::bindings::{Listing, PluginPre, WitVersion};
use super::budget::bounded;
use super::cache::sha256_hex;
use super::code_pages::CodePages;
use super::file::{self, ReadError};
use super::load_error::{CompileError, ListError, LoadError, LoadProblem};
use super::lock::LockFile;
use super::manifest::{EffectiveLimits, Manifest};
use super::names::valid_plugin_name;
use super::net::NetPolicy;
use super::operations::{self, MAX_INSTRUCTIONS_BYTES};
use super::plugin::Plugin;
use super::sandbox::{CallState, SandboxSpec, new_store};
use super::secrets::SecretNeeds;
use super::secrets::settings::effective_config;
use super::types::NoNestedCalls;
use super::verify::{self, ExampleScope};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::Component;

/// The plugin name of `path`: its file stem.
pub fn plugin_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The manifest path of a plugin: `NAME.toml` beside `NAME.wasm`.
pub fn manifest_path(wasm: &Path) -> PathBuf {
    wasm.with_extension("toml")
}

/// Whether a load runs the plugin's examples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verify {
    /// Run the examples that are safe to run at load; any failure rejects the plugin.
    Examples,
    /// Do not run them (`wasmhub plugin test` runs and reports every one itself).
    Skip,
}

pub(super) async fn load(
    inner: &Arc<Inner>,
    path: &Path,
    lock: Option<&LockFile>,
    verify: Verify,
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
    let file = match read_wasm(path, inner.load.max_plugin_mb, lock, &mut err.digest).await {
        Ok(file) => file,
        Err(problem) => return Err(with(err, problem)),
    };
    // Before compiling: an untrusted file's bytes never reach the compiler.
    let signer = match inner.trust.check_file(path, &file.digest) {
        Ok(signer) => signer,
        Err(problem) => return Err(with(err, LoadProblem::Trust(problem))),
    };
    let manifest = read_manifest(path, &mut err.problems);
    let (pre, imports, code) = match link(inner, &name, &file.digest, file.bytes).await {
        Ok(linked) => linked,
        Err(problem) => return Err(with(err, problem)),
    };
    if !err.problems.is_empty() {
        return Err(err);
    }

    let config = match effective_config(&name, &manifest, inner.secrets.settings(&name)) {
        Ok(config) => config,
        Err(problems) => {
            err.problems
                .extend(problems.into_iter().map(LoadProblem::Settings));
            return Err(err);
        }
    };
    let (sandbox, notes) = sandbox_spec(&name, &manifest, config, inner);
    let listing = match list(inner, &pre, &sandbox, &name).await {
        Ok(listing) => listing,
        Err(e) => return Err(with(err, LoadProblem::List(e))),
    };
    let text_cap = sandbox.limits.text_bytes();
    let operations = operations::validate(listing.specs, text_cap, &mut err.problems);
    if !err.problems.is_empty() {
        return Err(err);
    }
    let instructions = listing
        .instructions
        .filter(|text| !text.trim().is_empty())
        .map(|text| bounded(text, MAX_INSTRUCTIONS_BYTES.min(text_cap)));
    let plugin = Arc::new(Plugin {
        name_arc: name.as_str().into(),
        name,
        digest: file.digest,
        signer,
        size: file.size,
        path: path.to_owned(),
        operations,
        instructions,
        manifest,
        imports,
        notes,
        engine: inner.engine.clone(),
        runtime: inner.clone(),
        pre,
        sandbox,
        max_instances: inner.max_instances,
    });
    if verify == Verify::Examples {
        let timeout = Duration::from_millis(inner.load.timeout_ms);
        let failures = verify::run(&plugin, ExampleScope::AtLoad, timeout)
            .await
            .failures();
        if !failures.is_empty() {
            let problems = failures
                .into_iter()
                .map(|f| LoadProblem::Verification(Box::new(f)));
            err.problems.extend(problems);
            return Err(err);
        }
    }
    // The listing and the examples are over: what they mapped of the code goes.
    let released = code.release();
    crate::debug!(
        "plugin {}: released {} KiB of code mapping",
        plugin.name,
        released / 1024
    );
    for note in &plugin.notes {
        crate::warn!("plugin {}: {note}", plugin.name);
    }
    Ok(plugin)
}

/// A `.wasm` file read whole, within the size cap.
struct WasmFile {
    bytes: Vec<u8>,
    size: u64,
    digest: String,
}

/// Reads the file, refusing it when it is not a regular file, too large, not pinned in `lock` (when
/// given), or not a component; `digest` is set as soon as the bytes are read.
async fn read_wasm(
    path: &Path,
    limit_mb: u64,
    lock: Option<&LockFile>,
    digest: &mut Option<String>,
) -> Result<WasmFile, LoadProblem> {
    let cap = limit_mb.saturating_mul(1 << 20);
    let owned = path.to_owned();
    let bytes = tokio::task::spawn_blocking(move || file::read_capped(&owned, cap))
        .await
        .map_err(|e| LoadProblem::Read(std::io::Error::other(e)))?
        .map_err(|e| match e {
            ReadError::Io(e) => LoadProblem::Read(e),
            ReadError::NotRegular(kind) => LoadProblem::NotRegularFile(kind),
            ReadError::TooLarge { .. } => LoadProblem::TooLarge { limit_mb },
        })?;
    let size = bytes.len() as u64;
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
            let path = e.path;
            problems.extend(e.problems.into_iter().map(|problem| LoadProblem::Manifest {
                path: path.clone(),
                problem,
            }));
            Manifest::default()
        }
    }
}

/// Compiles (or loads from the cache) the component, checks that it exports the
/// operations interface of a WIT version the host serves, and links it; returns
/// its imports and where its code lives too.
async fn link(
    inner: &Arc<Inner>,
    name: &str,
    digest: &str,
    bytes: Vec<u8>,
) -> Result<(PluginPre, Vec<String>, CodePages), LoadProblem> {
    let (component, code) = compile(inner, name, digest, bytes)
        .await
        .map_err(LoadProblem::Invalid)?;
    let ty = component.component_type();
    let exports: Vec<String> = ty.exports(&inner.engine).map(|(n, _)| n.to_string()).collect();
    let Some(version) = WitVersion::of_exports(&exports) else {
        return Err(LoadProblem::WrongWorld { exports });
    };
    let imports: Vec<String> = ty.imports(&inner.engine).map(|(n, _)| n.to_string()).collect();
    let pre = inner
        .linker
        .instantiate_pre(&component)
        .and_then(|pre| PluginPre::new(version, pre))
        .map_err(LoadProblem::Link)?;
    Ok((pre, imports, code))
}

/// What the plugin's calls are granted: the manifest's grants, environment values
/// read now, limits clamped to the operator's caps; the notes say what was lowered
/// or is missing.
fn sandbox_spec(
    name: &str,
    manifest: &Manifest,
    config: Vec<(String, String)>,
    inner: &Inner,
) -> (SandboxSpec, Vec<String>) {
    let (limits, mut notes) = EffectiveLimits::resolve(&manifest.limits, &inner.call);
    let mut env = Vec::new();
    for var in manifest.env_vars.iter().chain(&manifest.env_secrets) {
        match std::env::var(var) {
            Ok(value) => env.push((var.clone(), value)),
            Err(_) => notes.push(format!(
                "environment variable {var} is granted but not set on the host"
            )),
        }
    }
    let sandbox = SandboxSpec {
        env,
        config: Arc::new(config),
        needs: SecretNeeds::new(name, manifest, inner.secrets.clone()),
        dirs: manifest.dirs.clone(),
        net: Arc::new(NetPolicy::new(manifest.network.clone()).with_trace_context(manifest.trace_context)),
        limits,
        memory: inner.memory.clone(),
    };
    (sandbox, notes)
}

fn with(mut err: LoadError, problem: LoadProblem) -> LoadError {
    err.problems.push(problem);
    err
}

/// The component for `bytes`: from the cache, or compiled on the blocking pool
/// (compiling has no timeout, so it never runs on the async threads).
async fn compile(
    inner: &Arc<Inner>,
    name: &str,
    digest: &str,
    bytes: Vec<u8>,
) -> Result<(Component, CodePages), CompileError> {
    if let Some(cache) = &inner.cache {
        let (cache, engine, d) = (cache.clone(), inner.engine.clone(), digest.to_string());
        let hit = tokio::task::spawn_blocking(move || cache.get(&engine, &d))
            .await
            .ok()
            .flatten();
        if let Some(compiled) = hit {
            crate::debug!("plugin {name}: compiled code loaded from cache");
            return Ok(compiled);
        }
    }
    let started = Instant::now();
    let kib = bytes.len() / 1024;
    crate::info!("plugin {name}: compiling {kib} KiB...");
    let (engine, cache, d) = (inner.engine.clone(), inner.cache.clone(), digest.to_string());
    let compiled = tokio::task::spawn_blocking(move || -> wasmtime::Result<(Component, CodePages)> {
        let artifact = engine.precompile_component(&bytes)?;
        if let Some(compiled) = cache.as_ref().and_then(|cache| cache.put(&engine, &d, &artifact)) {
            return Ok(compiled);
        }
        // SAFETY: `artifact` was produced just above by this engine's
        // `precompile_component`, which is what `deserialize` requires.
        let component = unsafe { Component::deserialize(&engine, &artifact) }?;
        Ok((component, CodePages::InMemory))
    })
    .await
    .map_err(CompileError::Task)?
    .map_err(CompileError::Wasmtime)?;
    crate::info!("plugin {name}: compiled in {} ms", started.elapsed().as_millis());
    Ok(compiled)
}

/// Instantiates the plugin and calls `operations.list` in a fresh sandbox with the
/// plugin's own grants and limits and no nested calls, within `limits.load_timeout_ms`
/// (the plugin's `timeout_ms` if shorter), so one plugin cannot stall a reload.
/// While running calls hold the whole memory budget, it waits (polling, within the
/// same time limit) rather than rejecting the plugin until its file changes.
async fn list(
    inner: &Inner,
    pre: &PluginPre,
    sandbox: &SandboxSpec,
    name: &str,
) -> Result<Listing, ListError> {
    let limit_ms = inner.load.timeout_ms.min(sandbox.limits.timeout_ms);
    let deadline = tokio::time::Instant::now() + Duration::from_millis(limit_ms);
    loop {
        match list_once(inner, pre, sandbox, name, deadline, limit_ms).await {
            Err(ListError::MemoryBudget { .. }) if tokio::time::Instant::now() + BUDGET_RETRY < deadline => {
                tokio::time::sleep(BUDGET_RETRY).await;
            }
            result => return result,
        }
    }
}

/// How often a load waiting for the memory budget tries again.
const BUDGET_RETRY: Duration = Duration::from_millis(50);

async fn list_once(
    inner: &Inner,
    pre: &PluginPre,
    sandbox: &SandboxSpec,
    name: &str,
    deadline: tokio::time::Instant,
    limit_ms: u64,
) -> Result<Listing, ListError> {
    let state = CallState::new(
        sandbox,
        name.into(),
        "load".into(),
        deadline,
        Arc::new(NoNestedCalls),
        // Loads share one tenant's CPU share: a plugin spinning in list() cannot
        // crowd out the calls of the plugins already loaded.
        inner.cpu.gate(&Arc::from("load"), &Arc::from(name)),
        None,
    )
    .map_err(ListError::Sandbox)?;
    let mut store = new_store(&inner.engine, state, &sandbox.limits);
    let result = tokio::time::timeout_at(deadline, pre.list(&mut store)).await;
    store.data().log.summarize(name, "load");
    match result {
        Err(_) => Err(ListError::Timeout { limit_ms }),
        Ok(Err(_)) if store.data().limiter.budget_hit => Err(ListError::MemoryBudget {
            budget_mb: sandbox.memory.budget_mb(),
        }),
        Ok(Err(source)) if store.data().limiter.hit => Err(ListError::MemoryLimit {
            limit_mb: sandbox.limits.memory_mb,
            source,
        }),
        Ok(Err(e)) => Err(ListError::Failed(e)),
        Ok(Ok(listing)) => Ok(listing),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::names::valid_operation_name;

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
}
