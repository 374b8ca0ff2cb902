//! Generated bindings for the `wasmhub:plugin@0.1.0` world, the host side of its
//! `host` interface (`log` to the hub log, `call` to the hub's call protocol), and
//! the one `Linker` every plugin is instantiated against.

use super::budget::call_log;
use super::sandbox::CallState;
use super::types::ErrorCode;
use wasmtime::component::{HasSelf, Linker};

// `path` is relative to the host crate's manifest directory.
wasmtime::component::bindgen!({
    world: "plugin",
    path: "../wit",
    imports: {
        "wasmhub:plugin/host.call": async,
        default: trappable,
    },
    exports: { default: async },
});

pub(super) use exports::wasmhub::plugin::operations::{Error as PluginError, OperationSpec};
// `self::`: the generated module `wasmhub` shares its name with this crate, which
// doctests see as an extern crate; a bare path is ambiguous there.
pub(super) use self::wasmhub::plugin::types::Hints as WitHints;
use self::wasmhub::plugin::types::{CallError, CallErrorCode, LogLevel};

/// The fully qualified name of the interface every plugin must export.
pub(super) const OPERATIONS_EXPORT: &str = "wasmhub:plugin/operations@0.1.0";

impl self::wasmhub::plugin::types::Host for CallState {}

impl self::wasmhub::plugin::host::Host for CallState {
    fn log(&mut self, level: LogLevel, message: String) -> wasmtime::Result<()> {
        use crate::logging::Level;
        let level = match level {
            LogLevel::Trace => Level::Trace,
            LogLevel::Debug => Level::Debug,
            LogLevel::Info => Level::Info,
            LogLevel::Warn => Level::Warn,
            LogLevel::Error => Level::Error,
        };
        // Bounded so a plugin cannot write megabytes into the hub log in one line;
        // the line counts against the call's `limits.log_lines`.
        call_log!(
            self.log,
            level,
            "plugin {} call {}: {}",
            self.plugin,
            self.call_id,
            message[..prefix_len(&message, MAX_LOG_CHARS)].escape_debug()
        );
        Ok(())
    }

    async fn call(&mut self, tool: String, input_json: String) -> Result<String, CallError> {
        self.nested.call(tool, input_json).await.map_err(|e| CallError {
            code: wit_code(e.code),
            message: e.message,
        })
    }
}

/// Longest `host.log` message written, in chars.
const MAX_LOG_CHARS: usize = 4096;

/// Bytes of the first `chars` chars of `text`.
fn prefix_len(text: &str, chars: usize) -> usize {
    text.char_indices().nth(chars).map_or(text.len(), |(i, _)| i)
}

fn wit_code(code: ErrorCode) -> CallErrorCode {
    match code {
        ErrorCode::InvalidInput => CallErrorCode::InvalidInput,
        ErrorCode::NotFound => CallErrorCode::NotFound,
        ErrorCode::Forbidden => CallErrorCode::Forbidden,
        ErrorCode::Timeout => CallErrorCode::Timeout,
        ErrorCode::MemoryLimit => CallErrorCode::MemoryLimit,
        ErrorCode::OutputLimit => CallErrorCode::OutputLimit,
        ErrorCode::Trap => CallErrorCode::Trap,
        ErrorCode::PluginError => CallErrorCode::PluginError,
        ErrorCode::Cancelled => CallErrorCode::Cancelled,
        ErrorCode::CallLimit => CallErrorCode::CallLimit,
    }
}

/// The linker: WASI p2 (filesystem, clocks, random, cli, sockets — all denied
/// unless granted per call), wasi:http (checked per request), and `host`.
pub(super) fn linker(engine: &wasmtime::Engine) -> wasmtime::Result<Linker<CallState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    Plugin::add_to_linker::<CallState, HasSelf<CallState>>(&mut linker, |s| s)?;
    Ok(linker)
}
