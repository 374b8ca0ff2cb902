//! `wasmhub plugin check|inspect|lock` as functions: exit codes, and the lock file
//! they write.

use crate::support::runtime::*;
use std::process::ExitCode;
use wasmhub::cli::plugin;
use wasmhub::runtime::LockFile;

fn code(c: ExitCode) -> String {
    format!("{c:?}")
}

#[test]
fn check_passes_good_plugins_and_fails_broken_ones() {
    let s = Scratch::new("cli-check");
    assert_eq!(
        code(plugin::check(&s.plugin("adversary", "adversary", None))),
        code(ExitCode::SUCCESS)
    );
    assert_eq!(
        code(plugin::check(&s.plugin("badschema", "badschema", None))),
        code(ExitCode::from(1))
    );
    std::fs::write(s.path("core.wasm"), b"\0asm\x01\0\0\0").unwrap();
    assert_eq!(code(plugin::check(&s.path("core.wasm"))), code(ExitCode::from(1)));
}

#[test]
fn inspect_describes_operations_grants_and_imports() {
    let s = Scratch::new("cli-inspect");
    let wasm = s.plugin(
        "fetcher",
        "fetcher",
        Some("[network]\nallow = [\"en.wikipedia.org\"]\n[env]\nsecrets = [\"WASMHUB_CLI_TEST_KEY\"]\n"),
    );
    assert_eq!(
        code(plugin::inspect(&wasm, false, &Default::default())),
        code(ExitCode::SUCCESS)
    );
    assert_eq!(
        code(plugin::inspect(&wasm, true, &Default::default())),
        code(ExitCode::SUCCESS)
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let p = rt.block_on(runtime().load(&wasm)).unwrap();
    let d = plugin::describe(&p);
    assert_eq!(d["grants"]["network"], serde_json::json!(["en.wikipedia.org"]));
    assert_eq!(
        d["grants"]["secrets"],
        serde_json::json!(["WASMHUB_CLI_TEST_KEY"])
    );
    assert_eq!(d["operations"][0]["name"], "get");
    assert_eq!(
        d["operations"][0]["hints"],
        serde_json::json!(["read-only", "open-world"])
    );
    assert_eq!(d["sha256"].as_str().unwrap().len(), 64);
    assert!(
        d["imports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i.as_str().unwrap().starts_with("wasi:http/"))
    );
}

#[test]
fn lock_pins_every_wasm_in_the_folder() {
    let s = Scratch::new("cli-lock");
    s.plugin("adversary", "a", None);
    s.plugin("fetcher", "b", None);
    assert_eq!(code(plugin::lock(&s.0)), code(ExitCode::SUCCESS));
    let lock = LockFile::read(&s.0).unwrap();
    assert_eq!(lock.len(), 2);
    assert_eq!(
        lock.digest("a.wasm").unwrap(),
        wasmhub::runtime::sha256_file(&s.path("a.wasm")).unwrap()
    );
}
