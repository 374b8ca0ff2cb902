//! Generated bindings for every version of the `wasmhub:plugin` world the host
//! serves (0.1.0 from `wit/0.1.0/`, 0.2.0 from `wit/0.2.0/`, 0.3.0 from `wit/`),
//! the host side of their `host` interface (`log` to the hub log, `call` to the
//! hub's call protocol, 0.3.0's `reveal-secret` to the plugin's secrets), the
//! one `Linker` every plugin is instantiated against, and [`PluginPre`]: a linked
//! component of either version behind one version-neutral surface, so nothing else
//! in the runtime knows which version a plugin targets.

use super::budget::call_log;
use super::sandbox::CallState;
use super::types::{ErrorCode, Hints};
use crate::timing::{self, Stage};
use std::fmt;
use std::time::Instant;
use wasmtime::Store;
use wasmtime::component::{ComponentExportIndex, HasSelf, InstancePre, Linker};

// `path` is relative to the host crate's manifest directory.
mod v0_1 {
    wasmtime::component::bindgen!({
        world: "plugin",
        path: "../wit/0.1.0",
        imports: { "wasmhub:plugin/host.call": async, default: trappable },
        exports: { default: async },
    });
}

mod v0_2 {
    wasmtime::component::bindgen!({
        world: "plugin",
        path: "../wit/0.2.0",
        imports: { "wasmhub:plugin/host.call": async, default: trappable },
        exports: { default: async },
    });
}

mod v0_3 {
    wasmtime::component::bindgen!({
        world: "plugin",
        path: "../wit",
        // 0.3.0's world imports `wasi:config/store`: the one implementation in
        // `config_store`, linked once for every version.
        with: { "wasi:config/store": crate::runtime::config_store::store },
        imports: {
            "wasmhub:plugin/host.call": async,
            "wasmhub:plugin/host.reveal-secret": async,
            default: trappable,
        },
        exports: { default: async },
    });
}

/// The version-neutral [`PluginError`] of a version's generated error type.
macro_rules! plugin_error {
    ($v:ident, $e:expr) => {{
        use $v::exports::wasmhub::plugin::operations::Error as E;
        match $e {
            E::InvalidInput(m) => PluginError::InvalidInput(m),
            E::NotFound(m) => PluginError::NotFound(m),
            E::Forbidden(m) => PluginError::Forbidden(m),
            E::Failed(m) => PluginError::Failed(m),
        }
    }};
}
/// The version-neutral [`Hints`] of a version's generated flags.
macro_rules! hints {
    ($v:ident, $h:expr) => {{
        use $v::wasmhub::plugin::types::Hints as H;
        let h = $h;
        Hints {
            read_only: h.contains(H::READ_ONLY),
            destructive: h.contains(H::DESTRUCTIVE),
            idempotent: h.contains(H::IDEMPOTENT),
            open_world: h.contains(H::OPEN_WORLD),
        }
    }};
}

/// The WIT sources of every version served, newest first, as `(version, text)`
/// (`wasmhub plugin wit` writes them out).
pub const WIT_SOURCES: &[(WitVersion, &str)] = &[
    (WitVersion::V0_3, include_str!("../../../wit/plugin.wit")),
    (WitVersion::V0_2, include_str!("../../../wit/0.2.0/plugin.wit")),
    (WitVersion::V0_1, include_str!("../../../wit/0.1.0/plugin.wit")),
];

/// A version of the `wasmhub:plugin` package a component targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum WitVersion {
    /// `wasmhub:plugin@0.1.0`: operations and `host`.
    #[serde(rename = "0.1.0")]
    V0_1,
    /// `wasmhub:plugin@0.2.0`: adds operation examples and plugin instructions.
    #[serde(rename = "0.2.0")]
    V0_2,
    /// `wasmhub:plugin@0.3.0`: adds `host.reveal-secret` and `wasi:config/store` in
    /// the world.
    #[serde(rename = "0.3.0")]
    V0_3,
}

impl WitVersion {
    /// The version the bundled SDKs (`guest-sdk`, `guest-sdk-py`, `guest-sdk-js`)
    /// bind, and so the one `plugin new` vendors.
    pub const SDK: WitVersion = WitVersion::V0_3;

    /// The WIT text of this version.
    pub fn source(self) -> &'static str {
        WIT_SOURCES
            .iter()
            .find(|(v, _)| *v == self)
            .map(|(_, text)| *text)
            .expect("every version has its source")
    }

    /// Every version served, newest first.
    pub const ALL: [WitVersion; 3] = [WitVersion::V0_3, WitVersion::V0_2, WitVersion::V0_1];

    /// The version number, `0.2.0`.
    pub fn as_str(self) -> &'static str {
        match self {
            WitVersion::V0_1 => "0.1.0",
            WitVersion::V0_2 => "0.2.0",
            WitVersion::V0_3 => "0.3.0",
        }
    }

    /// The fully qualified name of the interface a plugin of this version exports.
    pub fn operations_export(self) -> &'static str {
        match self {
            WitVersion::V0_1 => "wasmhub:plugin/operations@0.1.0",
            WitVersion::V0_2 => "wasmhub:plugin/operations@0.2.0",
            WitVersion::V0_3 => "wasmhub:plugin/operations@0.3.0",
        }
    }

    /// The version whose operations interface is among `exports`, newest first.
    pub(super) fn of_exports(exports: &[String]) -> Option<WitVersion> {
        WitVersion::ALL
            .into_iter()
            .find(|v| exports.iter().any(|e| e == v.operations_export()))
    }
}

impl fmt::Display for WitVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One example of an operation, as the plugin listed it (JSON still as text).
#[derive(Debug)]
pub(super) struct ExampleSpec {
    pub(super) description: String,
    pub(super) input: String,
    pub(super) output: Option<String>,
}

/// One operation spec, as the plugin listed it, whatever its WIT version.
#[derive(Debug)]
pub(super) struct OperationSpec {
    pub(super) name: String,
    pub(super) description: String,
    pub(super) input_schema: String,
    pub(super) output_schema: Option<String>,
    pub(super) hints: Hints,
    pub(super) examples: Vec<ExampleSpec>,
}

/// What a plugin says about itself at load.
#[derive(Debug)]
pub(super) struct Listing {
    /// Plugin-level instructions (0.2.0); `None` for 0.1.0 plugins and when absent.
    pub(super) instructions: Option<String>,
    pub(super) specs: Vec<OperationSpec>,
}

/// The WIT `error` a plugin returned, whatever its version.
#[derive(Debug)]
pub(super) enum PluginError {
    InvalidInput(String),
    NotFound(String),
    Forbidden(String),
    Failed(String),
}

/// Instantiates `pre` (of version `$v`, 0.2.0 or later) in `store` and asks it for
/// its instructions and operations.
macro_rules! list_with_instructions {
    ($v:ident, $pre:expr, $store:expr) => {{
        let plugin = $pre.instantiate_async(&mut *$store).await?;
        let ops = plugin.wasmhub_plugin_operations();
        let instructions = ops.call_instructions(&mut *$store).await?;
        let specs = ops.call_list(&mut *$store).await?;
        Ok(Listing {
            instructions,
            specs: specs.into_iter().map(|s| spec!($v, s)).collect(),
        })
    }};
}

/// Instantiates `pre` (of version `$v`) in `store` and runs `op` on `input`, timing
/// both stages. Only `operations.call` is looked up, by the index found at load:
/// the generated `instantiate_async` looks up and type-checks every function of the
/// interface on every instantiation (`list`'s nested records the costliest).
macro_rules! run_call {
    ($v:ident, $pre:expr, $call:expr, $store:expr, $op:expr, $input:expr) => {{
        use $v::exports::wasmhub::plugin::operations::Error;
        let started = Instant::now();
        let instance = $pre.instance_pre().instantiate_async(&mut *$store).await?;
        let call = instance
            .get_func(&mut *$store, $call)
            .ok_or_else(|| wasmtime::format_err!("the plugin exports no `call` function"))?
            .typed::<(&str, &str), (Result<String, Error>,)>(&*$store)?;
        let instantiated = timing::record(Stage::Instantiate, started);
        $store.data_mut().times.instantiate_us = (instantiated - started).as_micros() as u64;
        let (out,) = call.call_async(&mut *$store, ($op, $input)).await?;
        let done = timing::record(Stage::Guest, instantiated);
        $store.data_mut().times.guest_us = (done - instantiated).as_micros() as u64;
        out.map_err(|e| plugin_error!($v, e))
    }};
}

/// A component linked against the host, ready to instantiate once per call.
#[derive(Clone)]
pub(super) struct PluginPre {
    linked: Linked,
    /// The export `operations.call`, whose type the generated `new` checked.
    call: ComponentExportIndex,
}

/// The generated bindings of the plugin's version.
#[derive(Clone)]
enum Linked {
    V0_1(v0_1::PluginPre<CallState>),
    V0_2(v0_2::PluginPre<CallState>),
    V0_3(v0_3::PluginPre<CallState>),
}

impl PluginPre {
    /// Wraps `pre` as a plugin of `version` (checks the exports' types).
    pub(super) fn new(version: WitVersion, pre: InstancePre<CallState>) -> wasmtime::Result<PluginPre> {
        let component = pre.component().clone();
        // The generated check first: a component that does not fit the world fails
        // with its error, as before the index was kept.
        let linked = match version {
            WitVersion::V0_1 => Linked::V0_1(v0_1::PluginPre::new(pre)?),
            WitVersion::V0_2 => Linked::V0_2(v0_2::PluginPre::new(pre)?),
            WitVersion::V0_3 => Linked::V0_3(v0_3::PluginPre::new(pre)?),
        };
        let call = component
            .get_export_index(None, version.operations_export())
            .and_then(|operations| component.get_export_index(Some(&operations), "call"))
            .ok_or_else(|| wasmtime::format_err!("no export `{}.call`", version.operations_export()))?;
        Ok(PluginPre { linked, call })
    }

    /// The WIT version the component targets.
    pub(super) fn version(&self) -> WitVersion {
        match self.linked {
            Linked::V0_1(_) => WitVersion::V0_1,
            Linked::V0_2(_) => WitVersion::V0_2,
            Linked::V0_3(_) => WitVersion::V0_3,
        }
    }

    /// Instantiates the plugin in `store` and asks it for its instructions and
    /// operations.
    pub(super) async fn list(&self, store: &mut Store<CallState>) -> wasmtime::Result<Listing> {
        match &self.linked {
            Linked::V0_1(pre) => {
                let ops = pre.instantiate_async(&mut *store).await?;
                let specs = ops.wasmhub_plugin_operations().call_list(&mut *store).await?;
                Ok(Listing {
                    instructions: None,
                    specs: specs.into_iter().map(v0_1_spec).collect(),
                })
            }
            Linked::V0_2(pre) => list_with_instructions!(v0_2, pre, store),
            Linked::V0_3(pre) => list_with_instructions!(v0_3, pre, store),
        }
    }

    /// Instantiates the plugin in `store` and runs operation `op` on `input`.
    pub(super) async fn call(
        &self,
        store: &mut Store<CallState>,
        op: &str,
        input: &str,
    ) -> wasmtime::Result<Result<String, PluginError>> {
        Ok(match &self.linked {
            Linked::V0_1(pre) => run_call!(v0_1, pre, self.call, store, op, input),
            Linked::V0_2(pre) => run_call!(v0_2, pre, self.call, store, op, input),
            Linked::V0_3(pre) => run_call!(v0_3, pre, self.call, store, op, input),
        })
    }
}

fn v0_1_spec(s: v0_1::exports::wasmhub::plugin::operations::OperationSpec) -> OperationSpec {
    OperationSpec {
        hints: hints!(v0_1, s.hints),
        name: s.name,
        description: s.description,
        input_schema: s.input_schema,
        output_schema: s.output_schema,
        examples: Vec::new(),
    }
}

/// The version-neutral [`OperationSpec`] of a 0.2.0-or-later generated spec.
macro_rules! spec {
    ($v:ident, $s:expr) => {{
        let s: $v::exports::wasmhub::plugin::operations::OperationSpec = $s;
        OperationSpec {
            hints: hints!($v, s.hints),
            name: s.name,
            description: s.description,
            input_schema: s.input_schema,
            output_schema: s.output_schema,
            examples: s
                .examples
                .into_iter()
                .map(|e| ExampleSpec {
                    description: e.description,
                    input: e.input,
                    output: e.output,
                })
                .collect(),
        }
    }};
}
use spec;

/// The host side of one version's `host` interface; every version shares the same
/// behaviour ([`CallState::host_log`] and the call's nested-call router).
macro_rules! host_interface {
    ($v:ident $(, $reveal:ident)?) => {
        impl $v::wasmhub::plugin::types::Host for CallState {}

        impl $v::wasmhub::plugin::host::Host for CallState {
            fn log(
                &mut self,
                level: $v::wasmhub::plugin::types::LogLevel,
                message: String,
            ) -> wasmtime::Result<()> {
                use crate::logging::Level;
                use $v::wasmhub::plugin::types::LogLevel as L;
                let level = match level {
                    L::Trace => Level::Trace,
                    L::Debug => Level::Debug,
                    L::Info => Level::Info,
                    L::Warn => Level::Warn,
                    L::Error => Level::Error,
                };
                self.host_log(level, &message);
                Ok(())
            }

            async fn call(
                &mut self,
                tool: String,
                input_json: String,
            ) -> Result<String, $v::wasmhub::plugin::types::CallError> {
                use $v::wasmhub::plugin::types::{CallError, CallErrorCode as C};
                // A secret the call used goes no further than the call.
                let input_json = self.secrets.scrubber().json(&input_json);
                self.nested
                    .call(tool, input_json)
                    .await
                    .map_err(|e| CallError {
                        code: match e.code {
                            ErrorCode::InvalidInput => C::InvalidInput,
                            ErrorCode::NotFound => C::NotFound,
                            ErrorCode::Forbidden => C::Forbidden,
                            ErrorCode::Timeout => C::Timeout,
                            ErrorCode::MemoryLimit => C::MemoryLimit,
                            ErrorCode::OutputLimit => C::OutputLimit,
                            ErrorCode::Trap => C::Trap,
                            // The released WIT enums have no missing-secret code.
                            ErrorCode::PluginError | ErrorCode::MissingSecret => C::PluginError,
                            ErrorCode::Cancelled => C::Cancelled,
                            ErrorCode::CallLimit => C::CallLimit,
                            // The released WIT enums have no approval codes.
                            ErrorCode::ApprovalRequired | ErrorCode::ApprovalDenied => C::Forbidden,
                            // Nor one for an agent's invalid JSON answer.
                            ErrorCode::InvalidOutput => C::PluginError,
                        },
                        message: e.message,
                    })
            }
            $(
                async fn $reveal(&mut self, name: String) -> Result<String, String> {
                    self.secrets.clone().reveal(&name).await
                }
            )?
        }
    };
}

host_interface!(v0_1);
host_interface!(v0_2);
host_interface!(v0_3, reveal_secret);

impl CallState {
    /// `host.log`: one line in the hub log, tagged with the plugin and the call,
    /// bounded so a plugin cannot write megabytes into it in one line; the line
    /// counts against the call's `limits.log_lines`.
    fn host_log(&mut self, level: crate::logging::Level, message: &str) {
        let message = &self.secrets.scrubber().text(message);
        call_log!(
            self.log,
            level,
            "plugin {} call {}: {}",
            self.plugin,
            self.call_id,
            message[..prefix_len(message, MAX_LOG_CHARS)].escape_debug()
        );
    }
}

/// Longest `host.log` message written, in chars.
const MAX_LOG_CHARS: usize = 4096;

/// Bytes of the first `chars` chars of `text`.
fn prefix_len(text: &str, chars: usize) -> usize {
    text.char_indices().nth(chars).map_or(text.len(), |(i, _)| i)
}

/// The linker: WASI p2 (filesystem, clocks, random, cli, sockets — all denied
/// unless granted per call), wasi:http (checked per request), and `host` of every
/// WIT version served (their names carry the version, so they never collide).
pub(super) fn linker(engine: &wasmtime::Engine) -> wasmtime::Result<Linker<CallState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    v0_1::Plugin::add_to_linker::<CallState, HasSelf<CallState>>(&mut linker, |s| s)?;
    v0_2::Plugin::add_to_linker::<CallState, HasSelf<CallState>>(&mut linker, |s| s)?;
    // The world's `wasi:config/store` is `config_store`'s, added just below.
    v0_3::wasmhub::plugin::types::add_to_linker::<CallState, HasSelf<CallState>>(&mut linker, |s| s)?;
    v0_3::wasmhub::plugin::host::add_to_linker::<CallState, HasSelf<CallState>>(&mut linker, |s| s)?;
    super::config_store::add_to_linker(&mut linker)?;
    Ok(linker)
}
