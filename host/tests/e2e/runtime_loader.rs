//! The loader's verdict on broken files: each gets a precise reason, and a bad file
//! never stops the others from loading.

use crate::support::runtime::*;
use wasmhub::runtime::{LoadProblem, Runtime};

async fn problems(rt: &Runtime, path: &std::path::Path) -> Vec<LoadProblem> {
    rt.load(path).await.expect_err("must be rejected").problems
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_good_plugin_lists_its_operations_and_imports() {
    let s = Scratch::new("good");
    let p = runtime()
        .load(&s.plugin("adversary", "adversary", None))
        .await
        .unwrap();
    assert_eq!(p.name(), "adversary");
    assert_eq!(p.digest().len(), 64);
    assert!(p.operations().len() >= 15);
    let echo = p.operation("echo").unwrap();
    assert!(echo.hints.read_only && echo.hints.idempotent && !echo.hints.destructive);
    assert!(echo.input_validator.is_valid(&serde_json::json!({})));
    assert!(!echo.input_validator.is_valid(&serde_json::json!([])));
    assert!(
        p.imports().iter().any(|i| i == "wasmhub:plugin/host@0.1.0"),
        "{:?}",
        p.imports()
    );
    assert!(
        p.imports().iter().any(|i| i.starts_with("wasi:cli/")),
        "{:?}",
        p.imports()
    );
    assert!(!p.deprecated());
    assert!(p.manifest().path.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_core_module_and_garbage_files_get_precise_reasons() {
    let s = Scratch::new("broken");
    let rt = runtime();
    let bytes = std::fs::read(guest("adversary")).unwrap();
    std::fs::write(s.path("truncated.wasm"), &bytes[..bytes.len() / 2]).unwrap();
    std::fs::write(s.path("core.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::write(s.path("garbage.wasm"), b"#!/bin/sh\necho hello\n").unwrap();
    std::fs::write(s.path("empty.wasm"), b"").unwrap();

    let p = problems(&rt, &s.path("truncated.wasm")).await;
    assert!(matches!(&p[..], [LoadProblem::Invalid(_)]), "{p:?}");
    assert!(p[0].to_string().contains("truncated"), "{}", p[0]);
    let p = problems(&rt, &s.path("core.wasm")).await;
    assert!(matches!(&p[..], [LoadProblem::CoreModule]), "{p:?}");
    assert!(LoadProblem::CoreModule.to_string().contains("not a component"));
    for file in ["garbage.wasm", "empty.wasm"] {
        let p = problems(&rt, &s.path(file)).await;
        assert!(matches!(&p[..], [LoadProblem::NotWasm]), "{file}: {p:?}");
    }
    let missing = problems(&rt, &s.path("absent.wasm")).await;
    assert!(matches!(&missing[..], [LoadProblem::Read(_)]), "{missing:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_of_another_world_names_what_it_exports() {
    let s = Scratch::new("world");
    let err = runtime()
        .load(&s.plugin("otherworld", "greeter", None))
        .await
        .unwrap_err();
    assert!(
        matches!(&err.problems[..], [LoadProblem::WrongWorld { exports }]
            if exports == &["example:greeter/greet@1.0.0"]),
        "{:?}",
        err.problems
    );
    let text = err.to_string();
    assert!(
        text.contains(
            "exports none of wasmhub:plugin/operations@0.3.0, wasmhub:plugin/operations@0.2.0, wasmhub:plugin/operations@0.1.0"
        ),
        "{text}"
    );
    assert!(text.contains("example:greeter/greet@1.0.0"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_broken_operation_spec_is_reported_on_its_own_line() {
    let s = Scratch::new("schema");
    let err = runtime()
        .load(&s.plugin("badschema", "badschema", None))
        .await
        .unwrap_err();
    let lines: Vec<String> = err.to_string().lines().map(String::from).collect();
    assert_eq!(lines.len(), 6, "{lines:#?}");
    assert!(
        lines[0].starts_with("operation \"Bad-Name\": the name must match"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with("operation \"twice\": the name is listed more than once"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].contains("\"wrong_type\"") && lines[2].contains("\"type\": \"object\""),
        "{}",
        lines[2]
    );
    assert!(
        lines[3].contains("\"array_root\"") && lines[3].contains("must describe an object"),
        "{}",
        lines[3]
    );
    assert!(
        lines[4].contains("\"not_json\"") && lines[4].contains("is not JSON"),
        "{}",
        lines[4]
    );
    assert!(
        lines[5].contains("\"bad_output\"") && lines[5].contains("output schema is not valid JSON Schema"),
        "{}",
        lines[5]
    );
    assert!(err.digest.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_size_and_manifests_are_checked() {
    let s = Scratch::new("names");
    let rt = runtime();
    let p = problems(&rt, &s.plugin("adversary", "Bad.Name", None)).await;
    assert!(
        matches!(&p[..], [LoadProblem::BadName(name)] if name == "Bad.Name"),
        "{p:?}"
    );

    let tiny = Runtime::new(
        &{
            let mut l = limits();
            l.load.max_plugin_mb = 0;
            l
        },
        None,
    )
    .unwrap();
    let p = problems(&tiny, &s.plugin("adversary", "big", None)).await;
    assert!(
        matches!(p[..], [LoadProblem::TooLarge { limit_mb: 0, .. }]),
        "{p:?}"
    );

    let wasm = s.plugin(
        "adversary",
        "manifested",
        Some("[limits]\nmemory_mb = 8\ncolour = \"red\"\n"),
    );
    let p = problems(&rt, &wasm).await;
    assert_eq!(p.len(), 1, "{p:?}");
    let text = p[0].to_string();
    assert!(
        text.contains("manifested.toml") && text.contains("line 3") && text.contains("colour"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifest_limits_are_clamped_to_the_operators_caps() {
    let s = Scratch::new("clamp");
    let wasm = s.plugin(
        "adversary",
        "greedy",
        Some("[limits]\nmemory_mb = 4096\ntimeout_ms = 100\n"),
    );
    let p = runtime().load(&wasm).await.unwrap();
    assert_eq!(p.limits().memory_mb, limits().call.memory_mb);
    assert_eq!(p.limits().timeout_ms, 100);
    assert!(
        p.notes().iter().any(|n| n.contains("memory_mb = 4096")),
        "{:?}",
        p.notes()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wasi_http_without_a_grant_loads_and_every_request_is_forbidden() {
    let s = Scratch::new("nohttp");
    let p = runtime()
        .load(&s.plugin("fetcher", "fetcher", None))
        .await
        .unwrap();
    assert!(
        p.imports()
            .iter()
            .any(|i| i.starts_with("wasi:http/outgoing-handler")),
        "{:?}",
        p.imports()
    );
    let err = p
        .call("get", r#"{"url":"http://127.0.0.1:9/"}"#, inv())
        .await
        .unwrap_err();
    assert_eq!(err.code(), wasmhub::runtime::ErrorCode::Forbidden, "{err}");
    assert_eq!(err.to_string(), "HTTP request denied");
}
