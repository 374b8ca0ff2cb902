//! The sandboxed component runtime: one wasmtime engine per process, loading and
//! validating plugin components, running each call in a fresh instance under its
//! limits, the compiled-code cache, the watched plugin folder and `plugins.lock`.
//!
//! The hub layer calls [`Runtime::load`] / [`PluginDir::start`] and
//! [`Plugin::call`]; everything about wasmtime stays in this module.
//!
//! - `engine`: engine configuration and the epoch ticker;
//! - `bindings`: every WIT version served (0.1.0, 0.2.0, 0.3.0) behind one surface, and
//!   the host side of `wasmhub:plugin/host`;
//! - `sandbox`, `capture`, `net`: what one call may touch;
//! - `config_store`: `wasi:config/store`, a plugin's own configuration;
//! - `cpu`: each tenant's CPU share for calls that run past an epoch tick;
//! - `budget`: per-call budgets (hub-log lines, outgoing HTTP requests) and the
//!   bound on plugin-provided text;
//! - `file`: reading plugin files (regular files only, size capped while reading);
//! - `manifest`: `NAME.toml` grants, limits, and the secrets and configuration
//!   a plugin needs;
//! - `secrets`: the operator's values for those: sealed secrets (store, key,
//!   references) and `[plugin.NAME]` settings;
//! - `loader`, `load_error`, `operations`: loading, why a load failed, checking
//!   the listed operations;
//! - `verify`: running the operations' examples (at load, and `plugin test`);
//! - `plugin`: calling;
//! - `cache`, `lock`, `dir`: compiled cache, pinning, hot reload;
//! - `code_pages`: giving back the compiled-code pages a plugin's load mapped;
//! - `trust`: plugin signatures (`NAME.wasm.sig`) and the `[trust]` policy.

mod bindings;
mod budget;
mod cache;
mod capture;
mod code_pages;
mod config_store;
mod cpu;
mod dir;
mod engine;
mod file;
mod load_error;
mod loader;
mod lock;
mod manifest;
mod names;
mod net;
mod operation_problem;
mod operations;
mod plugin;
mod sandbox;
pub mod secrets;
mod trust;
mod types;
mod verify;

pub use bindings::{WIT_SOURCES, WitVersion};
pub(crate) use budget::bounded as bounded_text;
pub use config_store::WASI_CONFIG_WIT;
pub use cpu::CpuShares;
pub use dir::{
    OnChange, POLL_INTERVAL as FOLDER_POLL_INTERVAL, PluginDir, PluginEntry, PluginState, Stamp as FileStamp,
    stamp as file_stamp,
};
pub use engine::{Allocator, epoch_tick};
pub use file::FileKind;
pub(crate) use file::{ReadError, read_capped};
pub use load_error::{CompileError, ListError, LoadError, LoadProblem};
pub use loader::{manifest_path, plugin_name};
pub use lock::{LOCK_FILE, LockError, LockFile, Source};
pub use manifest::{
    ConfigDecl, ConfigType, DirGrant, EffectiveLimits, GrantError, HostGrant, InjectRule, LimitRequests,
    Manifest, ManifestError, ManifestProblem, SecretDecl, SecretUse, is_config_name, is_env_name,
};
pub use names::{valid_operation_name, valid_plugin_name};
pub use operation_problem::{MAX_EXAMPLE_BYTES, MAX_EXAMPLES, OperationProblem, SchemaRole};
pub use operations::{MAX_INSTRUCTIONS_BYTES, compile_value as compile_schema};
pub use plugin::{Example, Operation, Plugin};
pub use sandbox::SandboxError;
pub use secrets::Secrets;
pub use trust::{
    MAX_SIGNATURE_BYTES, SIGNATURE_FORMAT, Signature, SigningKey, SigningKeyError, TrustPolicy, TrustProblem,
    key_id, signature_path,
};
pub use types::{
    CallFailure, CallOutput, CallTimes, Deadline, ErrorCode, Hints, Invocation, NestedCallError, NestedCalls,
    NoNestedCalls, TrapKind,
};
pub use verify::{ExampleError, ExampleFailure, ExampleOutcome, ExampleReport, ExampleReports, ExampleScope};

use crate::config::{CallCaps, Limits, LoadLimits};
use loader::Verify;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

/// Why the runtime (or the plugin folder watcher) could not start.
#[derive(Debug)]
pub enum RuntimeError {
    /// wasmtime rejected the engine configuration.
    Engine(wasmtime::Error),
    /// The host's linker could not be built (a wasmtime/WASI version mismatch).
    Linker(wasmtime::Error),
    /// The epoch ticker thread could not be spawned.
    Ticker(std::io::Error),
    /// A `[trust]` key is not a public key (or key id).
    Trust(trust::TrustKeyError),
    /// A `[plugin.NAME]` table names no possible plugin or configuration key.
    Settings(secrets::SettingsError),
    /// The plugins folder cannot be read.
    PluginDir {
        /// The plugins folder.
        path: std::path::PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeError::Engine(e) => write!(f, "cannot configure the wasmtime engine: {e}"),
            RuntimeError::Linker(e) => write!(f, "cannot link the host interfaces: {e}"),
            RuntimeError::Ticker(e) => write!(f, "cannot start the epoch ticker thread: {e}"),
            RuntimeError::Trust(e) => write!(f, "[trust]: {e}"),
            RuntimeError::Settings(e) => write!(f, "{e}"),
            RuntimeError::PluginDir { path, source } => {
                write!(f, "cannot read the plugins folder {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for RuntimeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RuntimeError::Engine(e) | RuntimeError::Linker(e) => Some(e.as_ref()),
            RuntimeError::Ticker(e) | RuntimeError::PluginDir { source: e, .. } => Some(e),
            RuntimeError::Trust(e) => Some(e),
            RuntimeError::Settings(e) => Some(e),
        }
    }
}

/// Shared state behind [`Runtime`].
struct Inner {
    engine: wasmtime::Engine,
    linker: wasmtime::component::Linker<sandbox::CallState>,
    /// The per-call caps manifests are clamped to.
    call: CallCaps,
    /// Plugin loading's bounds.
    load: LoadLimits,
    /// The pool's size (`limits.max_instances`).
    max_instances: u32,
    cache: Option<cache::CompiledCache>,
    allocator: Allocator,
    /// Linear memory of all running instances together (`limits.memory_budget_mb`).
    memory: Arc<budget::MemoryBudget>,
    /// Each tenant's CPU share (`limits.caller_cpu_share_percent`, else
    /// `caller_share_percent`, of the workers: `CpuLimits::caller_percent`).
    cpu: Arc<CpuShares>,
    /// Which signatures plugins need (`[trust]`).
    trust: TrustPolicy,
    /// The operator's secrets and `[plugin.NAME]` settings.
    secrets: Arc<Secrets>,
    _ticker: engine::Ticker,
}

/// The process's plugin runtime. Cheap to clone; create one per process.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

impl Runtime {
    /// Builds the engine (pooling allocator if possible), the linker and the epoch
    /// ticker; with `cache_dir`, compiled plugins are kept as files in that folder
    /// (a folder that cannot be created is logged, and plugins are compiled at
    /// every load: the cache is an optimization).
    pub fn new(limits: &Limits, cache_dir: Option<&Path>) -> Result<Runtime, RuntimeError> {
        Runtime::with_trust(limits, cache_dir, &crate::config::TrustConfig::default())
    }

    /// [`Runtime::new`] whose loads apply the `[trust]` policy: a plugin needs a
    /// good signature (`NAME.wasm.sig`) by a trusted, unrevoked key when
    /// `require_signed`, and a signature that is present must be good whenever keys
    /// are configured.
    pub fn with_trust(
        limits: &Limits,
        cache_dir: Option<&Path>,
        trust: &crate::config::TrustConfig,
    ) -> Result<Runtime, RuntimeError> {
        Runtime::with_secrets(limits, cache_dir, trust, Secrets::none())
    }

    /// [`Runtime::with_trust`] whose plugins get the operator's `secrets` and
    /// `[plugin.NAME]` settings (a plugin's configuration is checked at its load).
    pub fn with_secrets(
        limits: &Limits,
        cache_dir: Option<&Path>,
        trust: &crate::config::TrustConfig,
        secrets: Secrets,
    ) -> Result<Runtime, RuntimeError> {
        let trust = TrustPolicy::new(trust).map_err(RuntimeError::Trust)?;
        let (engine, allocator) = engine::build(limits).map_err(RuntimeError::Engine)?;
        let linker = bindings::linker(&engine).map_err(RuntimeError::Linker)?;
        let cache = cache_dir.and_then(|dir| match cache::CompiledCache::open(dir, &engine) {
            Ok(cache) => Some(cache),
            Err(e) => {
                crate::warn!(
                    "compiled cache: cannot use {}: {e}; plugins compile at every load",
                    dir.display()
                );
                None
            }
        });
        let cpu = Arc::new(CpuShares::new(async_workers(), &limits.cpu).preempting(engine.clone()));
        let ticker = engine::Ticker::start(engine.clone(), cpu.clone(), epoch_tick(&limits.cpu))
            .map_err(RuntimeError::Ticker)?;
        crate::debug!(
            "runtime: {allocator:?} allocator, epoch tick {:?}",
            epoch_tick(&limits.cpu)
        );
        Ok(Runtime {
            inner: Arc::new(Inner {
                engine,
                linker,
                call: limits.call.clone(),
                load: limits.load.clone(),
                max_instances: limits.pool.max_instances,
                cache,
                allocator,
                memory: budget::MemoryBudget::new(limits.pool.memory_budget_mb),
                cpu,
                trust,
                secrets: Arc::new(secrets),
                _ticker: ticker,
            }),
        })
    }

    /// Reads, (cached-)compiles, links, lists and validates the plugin at
    /// `wasm_path`, applying the manifest `NAME.toml` beside it, and runs the
    /// examples that are safe to run at load ([`ExampleScope::AtLoad`]).
    pub async fn load(&self, wasm_path: &Path) -> Result<Arc<Plugin>, LoadError> {
        loader::load(&self.inner, wasm_path, None, Verify::Examples).await
    }

    /// [`Runtime::load`], but first requires the file's sha256 to be pinned in `lock`.
    pub async fn load_locked(&self, wasm_path: &Path, lock: &LockFile) -> Result<Arc<Plugin>, LoadError> {
        loader::load(&self.inner, wasm_path, Some(lock), Verify::Examples).await
    }

    /// [`Runtime::load`] without running the examples, for a caller that runs and
    /// reports them itself ([`Runtime::run_examples`]).
    pub async fn load_unverified(&self, wasm_path: &Path) -> Result<Arc<Plugin>, LoadError> {
        loader::load(&self.inner, wasm_path, None, Verify::Skip).await
    }

    /// Runs the examples of `plugin` in `scope` through the sandbox, one after
    /// another, all within `limits.load_timeout_ms`; one report per example.
    pub async fn run_examples(&self, plugin: &Plugin, scope: ExampleScope) -> ExampleReports {
        let within = std::time::Duration::from_millis(self.inner.load.timeout_ms);
        verify::run(plugin, scope, within).await
    }

    /// The operator's secrets and `[plugin.NAME]` settings.
    pub fn secrets(&self) -> &Arc<Secrets> {
        &self.inner.secrets
    }

    /// Each tenant's CPU share; the hub bounds large validations with it too.
    pub fn cpu_shares(&self) -> &Arc<CpuShares> {
        &self.inner.cpu
    }

    /// Which instance allocator the engine uses.
    pub fn allocator(&self) -> Allocator {
        self.inner.allocator
    }

    /// Linear memory the instances alive now hold, in bytes (counted against
    /// `limits.memory_budget_mb`).
    pub fn memory_in_use(&self) -> usize {
        self.inner.memory.used_bytes()
    }

    /// Identifies compiled-code compatibility (wasmtime version, engine settings,
    /// CPU features): the compiled cache keeps this engine's artifacts in a folder
    /// of that name.
    pub fn engine_hash(&self) -> String {
        cache::engine_hash(&self.inner.engine)
    }

    /// Drops compiled artifacts of everything but the plugins whose sha256 is in
    /// `keep` (the plugins folder as it is now), so the cache does not grow with
    /// every plugin upgrade. A failure is logged: the cache is an optimization.
    pub fn prune_compiled_cache<'a>(&self, keep: impl IntoIterator<Item = &'a str>) {
        let Some(cache) = &self.inner.cache else { return };
        match cache.prune(&keep.into_iter().collect()) {
            Ok(0) => {}
            Ok(n) => crate::info!(
                "compiled cache: removed {n} artifacts of plugins no longer in the folder or of another engine"
            ),
            Err(e) => crate::warn!("compiled cache: cannot prune: {e}"),
        }
    }
}

/// The async worker threads of the runtime this is called in (1 outside one).
fn async_workers() -> usize {
    tokio::runtime::Handle::try_current().map_or(1, |h| h.metrics().num_workers())
}

/// sha256 of `bytes`, lowercase hex (the digest of plugins, `plugins.lock` and
/// OCI content).
pub fn sha256_hex(bytes: &[u8]) -> String {
    cache::sha256_hex(bytes)
}

/// sha256 of a regular file, lowercase hex (the digest plugins and `plugins.lock`
/// use); a FIFO or a device is refused, never read, and a file larger than the
/// default `limits.max_plugin_mb` is refused after reading at most that much.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    match file::read_all_regular(path, crate::config::Limits::default().load.max_plugin_mb) {
        Ok(bytes) => Ok(cache::sha256_hex(&bytes)),
        Err(file::ReadError::Io(e)) => Err(e),
        Err(e) => Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)),
    }
}
