//! Why a plugin was not loaded: [`LoadError`] lists every [`LoadProblem`] found,
//! each displayed as one line that says what is wrong and how to fix it, and each
//! keeping the error it came from (I/O, wasmtime, manifest, JSON) as `source()`.

use super::bindings::WitVersion;
use super::file::FileKind;
use super::manifest::ManifestProblem;
use super::names::MAX_NAME_LEN;
use super::operation_problem::OperationProblem;
use super::sandbox::SandboxError;
use super::trust::TrustProblem;
use super::verify::ExampleError;
use std::error::Error;
use std::fmt;
use std::path::PathBuf;

/// Why a plugin was rejected: every problem found, one per line.
#[derive(Debug)]
pub struct LoadError {
    /// The `NAME.wasm` file that was rejected.
    pub path: PathBuf,
    /// sha256 of the file when it could be read.
    pub digest: Option<String>,
    /// Every problem found, in the order checked; never empty.
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

impl Error for LoadError {
    /// The first problem: the others are in `problems`.
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.problems.first().map(|p| p as _)
    }
}

/// One reason a plugin cannot be loaded.
#[derive(Debug)]
pub enum LoadProblem {
    /// The file could not be read.
    Read(std::io::Error),
    /// The plugin name (file stem) is not `[a-z][a-z0-9_-]*`.
    BadName(String),
    /// Not a regular file (a FIFO, a device, a socket...): never read.
    NotRegularFile(FileKind),
    /// Larger than `limits.max_plugin_mb` (found while reading, not from metadata).
    TooLarge {
        /// `limits.max_plugin_mb`, in MiB.
        limit_mb: u64,
    },
    /// Does not start with the WebAssembly magic bytes.
    NotWasm,
    /// A core module, not a component.
    CoreModule,
    /// wasmtime could not compile it (truncated, corrupt, unsupported feature).
    Invalid(CompileError),
    /// Exports the operations interface of no WIT version the host serves.
    WrongWorld {
        /// The interface names it does export (may be empty).
        exports: Vec<String>,
    },
    /// Imports something the host does not provide, or exports the interface with
    /// other types.
    Link(wasmtime::Error),
    /// The capability manifest at `path` has this problem (one per problem).
    Manifest {
        /// The `NAME.toml` file.
        path: PathBuf,
        /// What is wrong with it.
        problem: ManifestProblem,
    },
    /// `operations.list` failed.
    List(ListError),
    /// The operator's `[plugin.NAME]` settings do not fit the manifest.
    Settings(super::secrets::SettingsProblem),
    /// An operation spec breaks a rule.
    Operation {
        /// The operation's name as the plugin listed it.
        op: String,
        /// The rule it breaks.
        problem: OperationProblem,
    },
    /// An example of an operation failed when run at load.
    Verification(Box<ExampleError>),
    /// The signature check of `[trust]` failed.
    Trust(TrustProblem),
    /// `--locked` and the file is not in `plugins.lock`.
    Unpinned,
    /// `--locked` and the file's digest differs from `plugins.lock`.
    DigestMismatch {
        /// The sha256 pinned in `plugins.lock`.
        expected: String,
        /// The sha256 of the file on disk.
        actual: String,
    },
}

impl fmt::Display for LoadProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadProblem::Read(e) => write!(f, "cannot read the file: {e}"),
            LoadProblem::BadName(n) => write!(
                f,
                "plugin name {n:?} (the file name without .wasm) must match [a-z][a-z0-9_-]* and be at most \
                 {MAX_NAME_LEN} bytes: rename the file"
            ),
            LoadProblem::NotRegularFile(kind) => write!(
                f,
                "{kind}, not a regular file: plugins are read from regular files only; put the built \
                 .wasm file here"
            ),
            LoadProblem::TooLarge { limit_mb } => write!(
                f,
                "the file is larger than the limit of {limit_mb} MiB (limits.max_plugin_mb): \
                 shrink it or raise the limit"
            ),
            LoadProblem::NotWasm => f.write_str(
                "not a WebAssembly file (it does not start with \\0asm): build the plugin for wasm32-wasip2",
            ),
            LoadProblem::CoreModule => f.write_str(
                "a core WebAssembly module, not a component: build with `--target wasm32-wasip2` (Rust) or wrap it \
                 with `wasm-tools component new`",
            ),
            LoadProblem::Invalid(e) => write!(f, "not a valid component ({e}): rebuild it; the file may be truncated"),
            LoadProblem::WrongWorld { exports } => {
                let found = if exports.is_empty() { "nothing".to_string() } else { exports.join(", ") };
                let wanted: Vec<&str> = WitVersion::ALL.iter().map(|v| v.operations_export()).collect();
                write!(
                    f,
                    "exports none of {} (it exports {found}): build it against the world `plugin` of the WIT \
                     that `wasmhub plugin wit` writes (package wasmhub:plugin@{})",
                    wanted.join(", "),
                    WitVersion::ALL[0]
                )
            }
            LoadProblem::Link(e) => write!(f, "cannot be linked: {}", link_message(e)),
            LoadProblem::Manifest { path, problem } => write!(f, "manifest: {}: {problem}", path.display()),
            LoadProblem::List(e) => write!(f, "operations.list failed: {e}"),
            LoadProblem::Settings(e) => write!(f, "{e}"),
            LoadProblem::Operation { op, problem } => write!(f, "operation {op:?}: {problem}"),
            LoadProblem::Verification(e) => write!(f, "verification failed: {e}"),
            LoadProblem::Trust(e) => write!(f, "trust: {e}"),
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

impl Error for LoadProblem {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            LoadProblem::Read(e) => Some(e),
            LoadProblem::Invalid(e) => Some(e),
            LoadProblem::Link(e) => Some(e.as_ref()),
            LoadProblem::Manifest { problem, .. } => Some(problem),
            LoadProblem::List(e) => Some(e),
            LoadProblem::Settings(e) => Some(e),
            LoadProblem::Operation { problem, .. } => Some(problem),
            LoadProblem::Verification(e) => Some(e.as_ref()),
            LoadProblem::Trust(e) => Some(e),
            LoadProblem::BadName(_)
            | LoadProblem::NotRegularFile(_)
            | LoadProblem::TooLarge { .. }
            | LoadProblem::NotWasm
            | LoadProblem::CoreModule
            | LoadProblem::WrongWorld { .. }
            | LoadProblem::Unpinned
            | LoadProblem::DigestMismatch { .. } => None,
        }
    }
}

/// Why compiling a component failed.
#[derive(Debug)]
pub enum CompileError {
    /// wasmtime rejected the bytes (or the compiled artifact).
    Wasmtime(wasmtime::Error),
    /// The blocking compile task panicked or was cancelled.
    Task(tokio::task::JoinError),
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileError::Wasmtime(e) => f.write_str(&error_text(e)),
            CompileError::Task(e) => write!(f, "compilation task failed: {e}"),
        }
    }
}

impl Error for CompileError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            CompileError::Wasmtime(e) => Some(e.as_ref()),
            CompileError::Task(e) => Some(e),
        }
    }
}

/// Why `operations.list` gave no usable answer at load.
#[derive(Debug)]
pub enum ListError {
    /// The sandbox could not be set up.
    Sandbox(SandboxError),
    /// Instantiating and listing took longer than `limit_ms`
    /// (`limits.load_timeout_ms`, or the plugin's `timeout_ms` if shorter).
    Timeout {
        /// The time allowed, in ms.
        limit_ms: u64,
    },
    /// It trapped after hitting the plugin's memory limit.
    MemoryLimit {
        /// The plugin's memory limit, in MiB.
        limit_mb: u64,
        /// The trap wasmtime reported.
        source: wasmtime::Error,
    },
    /// It trapped, or instantiating the component failed.
    Failed(wasmtime::Error),
    /// It returned no operations.
    Empty,
    /// The instances running at once used up `limits.memory_budget_mb`.
    MemoryBudget {
        /// `limits.memory_budget_mb`, in MiB.
        budget_mb: u64,
    },
}

impl fmt::Display for ListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListError::Sandbox(e) => write!(f, "{e}"),
            ListError::Timeout { limit_ms } => write!(
                f,
                "did not return within {limit_ms} ms (limits.load_timeout_ms, or the plugin's timeout_ms \
                 if lower): the plugin was not loaded; make list() return at once"
            ),
            ListError::MemoryLimit { limit_mb, source } => {
                write!(
                    f,
                    "hit the memory limit of {limit_mb} MiB ({})",
                    error_text(source)
                )
            }
            ListError::Failed(e) => f.write_str(&error_text(e)),
            ListError::Empty => f.write_str("the plugin lists no operations"),
            ListError::MemoryBudget { budget_mb } => write!(
                f,
                "the memory budget of all running instances ({budget_mb} MiB, limits.memory_budget_mb) \
                 was used up; the plugin is loaded again when it changes"
            ),
        }
    }
}

impl Error for ListError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            ListError::Sandbox(e) => Some(e),
            ListError::MemoryLimit { source: e, .. } | ListError::Failed(e) => Some(e.as_ref()),
            ListError::Timeout { .. } | ListError::Empty | ListError::MemoryBudget { .. } => None,
        }
    }
}

/// A wasmtime error with its whole chain on one line.
fn error_text(e: &wasmtime::Error) -> String {
    e.chain()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(": ")
        .replace('\n', " ")
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
