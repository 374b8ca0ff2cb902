//! `wasi:config/store` (`get`, `get-all`, the draft wasmtime-wasi-config and Spin
//! serve): a plugin reads the keys its manifest declares (`[config.NAME]`), with
//! the operator's values or the defaults, resolved at load. Only its own keys:
//! the store holds nothing else, and never a secret.

use super::sandbox::CallState;

/// The `wasi:config@0.2.0-draft` WIT package served (`plugin wit --out` writes it
/// to `deps/config/store.wit`, where WIT tools find a dependency).
pub const WASI_CONFIG_WIT: &str = include_str!("../../../wit/deps/config/store.wit");
use wasmtime::component::{HasSelf, Linker};

mod bindings {
    wasmtime::component::bindgen!({
        world: "imports",
        path: "../wit/deps/config",
        imports: { default: trappable },
    });
}

/// The generated `wasi:config/store` interface, which 0.3.0's plugin world reuses
/// (its bindgen `with` re-exports it as `pub`, so it must be `pub` here too).
#[allow(unreachable_pub)]
pub use bindings::wasi::config::store;
use store::{Error, Host};

impl Host for CallState {
    fn get(&mut self, key: String) -> wasmtime::Result<Result<Option<String>, Error>> {
        Ok(Ok(self
            .config
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.clone())))
    }

    fn get_all(&mut self) -> wasmtime::Result<Result<Vec<(String, String)>, Error>> {
        Ok(Ok(self.config.as_ref().clone()))
    }
}

/// Adds `wasi:config/store` to `linker`.
pub(super) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    bindings::Imports::add_to_linker::<CallState, HasSelf<CallState>>(linker, |s| s)
}
