//! Test guest: `list()` never returns, so tests can check that loading is bounded
//! by `limits.load_timeout_ms` and does not hold up the other plugins.

wit_bindgen::generate!({ world: "plugin", path: "../../../wit/0.1.0" });

use exports::wasmhub::plugin::operations::{Error, Guest, OperationSpec};

struct Spinlist;

impl Guest for Spinlist {
    fn list() -> Vec<OperationSpec> {
        let mut n = 0u64;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }

    fn call(_name: String, _input_json: String) -> Result<String, Error> {
        Err(Error::Failed("never loaded".into()))
    }
}

export!(Spinlist);
