//! A loaded plugin and its calls: every call gets a fresh `Store` and instance from
//! the plugin's `InstancePre` (nothing is shared between calls, so concurrent calls
//! run in parallel and a trapped instance never poisons the next call), runs under
//! its limits, and has each violation mapped to a precise [`CallFailure`].

use super::bindings::{PluginError, PluginPre, WitVersion};
use super::budget::bounded;
use super::cpu::TickGate;
use super::manifest::{EffectiveLimits, Manifest};
use super::sandbox::{CallState, SandboxSpec, new_store};
use super::secrets::Scrubber;
use super::types::{CallFailure, CallOutput, ErrorCode, Hints, Invocation, TrapKind};
use crate::timing::{self, Stage};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::time::Instant;
use wasmtime::Engine;

/// One operation of a plugin, with its schemas compiled once at load.
#[derive(Clone)]
pub struct Operation {
    /// Name inside the plugin (`[a-z][a-z0-9_]*`); the tool is `<plugin>.<name>`.
    pub name: String,
    /// What it does, for a language model; cut at `limits.plugin_text_kb`.
    pub description: String,
    /// JSON Schema of the input object, as the plugin listed it.
    pub input_schema: serde_json::Value,
    /// JSON Schema of the output; `None` when the plugin gave none (output unchecked).
    pub output_schema: Option<serde_json::Value>,
    /// Behaviour hints the plugin declared.
    pub hints: Hints,
    /// `input_schema` compiled once at load.
    pub input_validator: Arc<jsonschema::Validator>,
    /// `output_schema` compiled once at load; `None` when there is none.
    pub output_validator: Option<Arc<jsonschema::Validator>>,
    /// Worked examples (WIT 0.2.0), most typical first; none for 0.1.0 plugins.
    pub examples: Vec<Example>,
}

/// A worked example of an operation: shown to models with its schema, run by
/// `wasmhub plugin test` and when the plugin loads.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Example {
    /// What the example shows, in one sentence.
    pub description: String,
    /// The input object.
    pub input: serde_json::Value,
    /// The expected output; `None` when it is not fixed (the example must only succeed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<serde_json::Value>,
}

impl std::fmt::Debug for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operation")
            .field("name", &self.name)
            .field("hints", &self.hints)
            .finish_non_exhaustive()
    }
}

/// A validated, compiled plugin, ready to be called. Cheap to share (`Arc<Plugin>`);
/// in-flight calls keep the version they started with across hot reloads.
pub struct Plugin {
    pub(super) name: String,
    pub(super) digest: String,
    /// The key id of the trusted key that signed the file, when it was checked.
    pub(super) signer: Option<String>,
    pub(super) size: u64,
    pub(super) path: PathBuf,
    pub(super) operations: Vec<Operation>,
    pub(super) instructions: Option<String>,
    pub(super) manifest: Manifest,
    pub(super) imports: Vec<String>,
    pub(super) notes: Vec<String>,
    pub(super) engine: Engine,
    /// Keeps the runtime (and its epoch ticker) alive while the plugin is: without
    /// ticks, deadlines inside wasm code would never fire.
    pub(super) runtime: Arc<super::Inner>,
    pub(super) pre: PluginPre,
    pub(super) sandbox: SandboxSpec,
    pub(super) max_instances: u32,
    pub(super) name_arc: Arc<str>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.name)
            .field("digest", &self.digest)
            .field("operations", &self.operations)
            .finish_non_exhaustive()
    }
}

impl Plugin {
    /// The namespace: the file stem.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// sha256 of the `.wasm` file, lowercase hex.
    pub fn digest(&self) -> &str {
        &self.digest
    }
    /// The key id of the trusted key whose signature (`NAME.wasm.sig`) was verified
    /// at load; `None` when no signature was checked.
    pub fn signer(&self) -> Option<&str> {
        self.signer.as_deref()
    }
    /// Size of the `.wasm` file in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }
    /// The `.wasm` file it was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// Its operations, in the order the plugin listed them.
    pub fn operations(&self) -> &[Operation] {
        &self.operations
    }
    /// Text a model should read once before using this plugin (WIT 0.2.0), cut at
    /// 8 KiB; `None` when the plugin gives none.
    pub fn instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }
    /// The `wasmhub:plugin` version the component targets.
    pub fn wit_version(&self) -> WitVersion {
        self.pre.version()
    }
    /// The operation called `name` (without the namespace); `None` if there is none.
    pub fn operation(&self, name: &str) -> Option<&Operation> {
        self.operations.iter().find(|o| o.name == name)
    }
    /// Callable but hidden from search (manifest `deprecated = true`).
    pub fn deprecated(&self) -> bool {
        self.manifest.deprecated
    }
    /// The limits its calls run under (manifest requests clamped to the operator's caps).
    pub fn limits(&self) -> &EffectiveLimits {
        &self.sandbox.limits
    }
    /// Its capability manifest (`NAME.toml`; deny-all defaults when there is none).
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }
    /// The interfaces the component imports (`wasi:cli/environment@0.2.x`, ...).
    pub fn imports(&self) -> &[String] {
        &self.imports
    }
    /// Its configuration as the guest reads it: each `[config.NAME]` with the
    /// operator's value or the default (configuration is not secret).
    pub fn config(&self) -> &[(String, String)] {
        &self.sandbox.config
    }
    /// Load-time remarks that did not reject the plugin (a clamped limit, a granted
    /// environment variable that is not set).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Runs `op` on `input_json` in a fresh instance. Dropping the returned future
    /// stops the guest at its next epoch tick.
    pub async fn call(&self, op: &str, input_json: &str, inv: Invocation) -> Result<CallOutput, CallFailure> {
        if self.operation(op).is_none() {
            return Err(CallFailure::UnknownOperation(op.to_string()));
        }
        let limits = &self.sandbox.limits;
        if input_json.len() > limits.input_bytes() {
            return Err(CallFailure::InputTooLarge {
                limit_bytes: limits.input_bytes() as u64,
            });
        }
        let (deadline, limit_ms) = inv.deadline.resolve(Instant::now(), limits.timeout_ms);
        let state = CallState::new(
            &self.sandbox,
            self.name_arc.clone(),
            inv.call_id.into(),
            deadline,
            inv.nested,
            self.runtime.cpu.gate(&inv.tenant, &self.name_arc),
            inv.trace,
        )
        .map_err(|e| CallFailure::Plugin {
            code: ErrorCode::PluginError,
            message: e.to_string(),
        })?;
        let gate = state.gate.clone();
        let store = new_store(&self.engine, state, limits);

        let (store, result) = self.run_guest(store, gate, op, input_json, deadline).await?;
        let started = std::time::Instant::now();
        let outcome = self.outcome(&store, result, limit_ms);
        let outcome = scrubbed(outcome, &store.data().secrets.scrubber());
        drop(store);
        timing::record(Stage::Teardown, started);
        outcome
    }

    /// The call's outcome from its guest run and what its store holds.
    fn outcome(
        &self,
        store: &wasmtime::Store<CallState>,
        result: GuestRun,
        limit_ms: u64,
    ) -> Result<CallOutput, CallFailure> {
        let limits = &self.sandbox.limits;
        let state = store.data();
        state.log.summarize(&self.name, &state.call_id);
        let text_cap = limits.text_bytes();
        let logs = || state.output.text();
        let log_overflow = || CallFailure::OutputLimit {
            limit_bytes: limits.log_bytes() as u64,
        };
        // A secret the call needed and did not get decides its outcome, whatever the
        // guest made of the refused request.
        if let Some((secret, reason)) = state.secrets.missing_secret() {
            return Err(CallFailure::MissingSecret { secret, reason });
        }
        match result {
            Err(_elapsed) => Err(CallFailure::Timeout { limit_ms }),
            Ok(Err(e)) => {
                if state.output.overflowed() {
                    Err(log_overflow())
                } else if state.limiter.budget_hit {
                    Err(CallFailure::MemoryBudget {
                        budget_mb: self.sandbox.memory.budget_mb(),
                    })
                } else if state.limiter.hit {
                    Err(CallFailure::MemoryLimit {
                        limit_mb: limits.memory_mb,
                    })
                } else if hostcall_fuel_exhausted(&e) {
                    Err(CallFailure::OutputLimit {
                        limit_bytes: limits.output_bytes() as u64,
                    })
                } else if e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>().is_some() {
                    Err(CallFailure::Busy {
                        max_instances: self.max_instances,
                    })
                } else {
                    Err(CallFailure::Trap {
                        kind: trap_kind(&e),
                        message: bounded(trap_message(&e, &logs()), text_cap),
                    })
                }
            }
            Ok(Ok(_)) if state.output.overflowed() => Err(log_overflow()),
            Ok(Ok(Err(err))) => Err(plugin_failure(err, text_cap)),
            Ok(Ok(Ok(json))) if json.len() > limits.output_bytes() => Err(CallFailure::OutputLimit {
                limit_bytes: limits.output_bytes() as u64,
            }),
            Ok(Ok(Ok(json))) => Ok(CallOutput {
                json,
                logs: logs(),
                times: state.times,
            }),
        }
    }
}

/// `outcome` without any secret value the call used: its output, captured logs
/// and error message (`[redacted:NAME]`).
fn scrubbed(
    outcome: Result<CallOutput, CallFailure>,
    scrubber: &Scrubber,
) -> Result<CallOutput, CallFailure> {
    if scrubber.is_empty() {
        return outcome;
    }
    match outcome {
        Ok(out) => Ok(CallOutput {
            json: scrubber.json(&out.json),
            logs: scrubber.text(&out.logs),
            times: out.times,
        }),
        Err(CallFailure::Plugin { code, message }) => Err(CallFailure::Plugin {
            code,
            message: scrubber.text(&message),
        }),
        Err(CallFailure::Trap { kind, message }) => Err(CallFailure::Trap {
            kind,
            message: scrubber.text(&message),
        }),
        Err(other) => Err(other),
    }
}

/// What running a guest gives: the deadline passed, the guest failed, or its
/// operation's own result.
type GuestRun = Result<wasmtime::Result<Result<String, PluginError>>, tokio::time::error::Elapsed>;

impl Plugin {
    /// Instantiates the plugin in `store` and runs `op` until `deadline`, each poll
    /// on one of the tenant's running slots: on the low-priority threads from the
    /// moment its plugin is busy for the tenant (`runtime::cpu`, even mid-run),
    /// else right here. Nested calls always run here, inside their parent's poll,
    /// wherever that runs.
    async fn run_guest(
        &self,
        mut store: wasmtime::Store<CallState>,
        gate: TickGate,
        op: &str,
        input: &str,
        deadline: Instant,
    ) -> Result<(wasmtime::Store<CallState>, GuestRun), CallFailure> {
        if super::cpu::inside_a_call() {
            let run = gate.running(self.pre.call(&mut store, op, input));
            let result = tokio::time::timeout_at(deadline, run).await;
            return Ok((store, result));
        }
        let (pre, op, input) = (self.pre.clone(), op.to_owned(), input.to_owned());
        let busy = gate.busy_mark();
        let call = async move {
            let run = gate.running(pre.call(&mut store, &op, &input));
            let result = tokio::time::timeout_at(deadline, run).await;
            (store, result)
        };
        self.runtime
            .cpu
            .movable(busy, call)
            .await
            .map_err(|e| match e.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                // Only at shutdown: the low-priority runtime is gone.
                Err(_) => CallFailure::Trap {
                    kind: TrapKind::Other,
                    message: "the call was stopped: the hub is shutting down".into(),
                },
            })
    }
}

/// The guest tried to hand the host more bytes in one transfer (its result, or an
/// argument of a host call) than the store's hostcall fuel allows, which is sized
/// to the output limit: wasmtime refuses before copying. Its error type is private,
/// so match its message (wasmtime is pinned; a test covers this mapping).
fn hostcall_fuel_exhausted(e: &wasmtime::Error) -> bool {
    e.chain().any(|c| {
        c.to_string()
            .contains("fuel allocated for hostcalls has been exhausted")
    })
}

/// The plugin's own error, its message cut at `limits.plugin_text_kb` here so the
/// audit log, the model and the client all see the same bounded text.
fn plugin_failure(err: PluginError, text_cap: usize) -> CallFailure {
    let (code, message) = match err {
        PluginError::InvalidInput(m) => (ErrorCode::InvalidInput, m),
        PluginError::NotFound(m) => (ErrorCode::NotFound, m),
        PluginError::Forbidden(m) => (ErrorCode::Forbidden, m),
        PluginError::Failed(m) => (ErrorCode::PluginError, m),
    };
    CallFailure::Plugin {
        code,
        message: bounded(message, text_cap),
    }
}

fn trap_kind(e: &wasmtime::Error) -> TrapKind {
    use wasmtime::Trap;
    match e.downcast_ref::<Trap>() {
        Some(Trap::StackOverflow) => TrapKind::StackOverflow,
        Some(Trap::MemoryOutOfBounds | Trap::HeapMisaligned) => TrapKind::MemoryOutOfBounds,
        Some(Trap::TableOutOfBounds | Trap::IndirectCallToNull | Trap::BadSignature) => {
            TrapKind::BadIndirectCall
        }
        Some(Trap::UnreachableCodeReached) => TrapKind::Unreachable,
        Some(Trap::IntegerOverflow | Trap::IntegerDivisionByZero | Trap::BadConversionToInteger) => {
            TrapKind::Arithmetic
        }
        _ => TrapKind::Other,
    }
}

/// The trap's cause in one line, plus the guest's panic message when it printed one
/// (Rust guests write `panicked at ...` to stderr before aborting).
fn trap_message(e: &wasmtime::Error, logs: &str) -> String {
    let cause = match e.downcast_ref::<wasmtime::Trap>() {
        Some(trap) => trap.to_string(),
        None => e
            .to_string()
            .lines()
            .next()
            .unwrap_or("unknown error")
            .to_string(),
    };
    let panic = logs
        .lines()
        .skip_while(|l| !l.contains("panicked at"))
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    if panic.is_empty() {
        cause
    } else {
        let panic: String = panic.chars().take(500).collect();
        format!("{cause} ({panic})")
    }
}
