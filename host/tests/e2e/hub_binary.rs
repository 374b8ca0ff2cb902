//! The real `wasmhub` binary: `wasmhub call` runs one operation without a server,
//! and `wasmhub serve` answers the REST meta-tools with the example plugins.

use crate::hub_support::plugins;
use crate::runtime_support::Scratch;
use serde_json::{Value, json};
use std::process::{Command, Stdio};
use std::time::Duration;

fn wasmhub() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wasmhub"));
    cmd.env("WASMHUB_LOG", "info");
    cmd
}

#[test]
fn call_runs_one_operation_and_reports_errors_with_exit_1() {
    let dir = plugins(&[], &["text", "calc"]);
    let data = Scratch::new("call-data");
    let run = |tool: &str, input: &str| {
        wasmhub()
            .args(["call", tool, input, "--plugins"])
            .arg(&dir.0)
            .arg("--data")
            .arg(&data.0)
            .output()
            .expect("run wasmhub call")
    };
    let out = run("text.slugify", r#"{"text": "Hello, World!"}"#);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).expect("stdout is the result JSON");
    assert_eq!(result["slug"], "hello-world");

    let out = run("text.slugify", "{}");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("\"invalid_input\"") && stderr.contains("missing required property"),
        "{stderr}"
    );

    let out = run("calc.evl", r#"{"expression": "1"}"#);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("calc.eval"),
        "suggests the right name"
    );

    let out = run("calc.eval", "[1]");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be a JSON object"));
}

#[tokio::test]
async fn serve_answers_the_rest_meta_tools() {
    let dir = plugins(&[], &["text"]);
    let data = Scratch::new("serve-data");
    let mut child = wasmhub()
        .args(["serve", "--listen", "127.0.0.1:0", "--plugins"])
        .arg(&dir.0)
        .arg("--data")
        .arg(&data.0)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start wasmhub serve");
    let addr = crate::support::binary::listen_addr(&mut child, Duration::from_secs(60));
    let call = json!({"calls": [{"tool": "text.slugify", "input": {"text": "Served By The Binary"}}]});
    let resp = crate::support::client::post(addr, "/api/hub/call", &call).await;
    assert_eq!(resp.status, 200);
    let out = resp.json().await;
    assert_eq!(
        out["results"][0]["result"]["slug"], "served-by-the-binary",
        "{out}"
    );
    let health = crate::support::client::send(addr, http::Method::GET, "/health", None, &[])
        .await
        .json()
        .await;
    assert_eq!(health["plugins"]["active"], 1, "{health}");
    let _ = child.kill();
    let _ = child.wait();
}
