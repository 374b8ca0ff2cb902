//! The real `wasmhub` binary: `wasmhub call` runs one operation without a server,
//! and `wasmhub serve` answers the REST meta-tools with the example plugins.

use crate::support::binary::Stderr;
use crate::support::hub::plugins;
use crate::support::runtime::Scratch;
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
    // The binary's jemalloc options (`malloc_conf` in main.rs) were read: its
    // purging threads run.
    let threads = std::fs::read_dir(format!("/proc/{}/task", child.id())).unwrap();
    let purging = threads
        .map(|t| std::fs::read_to_string(t.unwrap().path().join("comm")).unwrap_or_default())
        .filter(|name| name.starts_with("jemalloc_bg_thd"))
        .count();
    assert!(purging > 0, "jemalloc's background threads run");
    let _ = child.kill();
    let _ = child.wait();
}

fn signal(child: &std::process::Child, signal: i32) {
    // SAFETY: kill(2) on our own child's pid.
    let rc = unsafe { libc::kill(child.id() as i32, signal) };
    assert_eq!(rc, 0, "signal {signal} delivered");
}

/// Waits up to `limit` for the child to exit.
pub(crate) fn exit_within(
    child: &mut std::process::Child,
    limit: Duration,
) -> Option<std::process::ExitStatus> {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if let Some(status) = child.try_wait().expect("wait on wasmhub") {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    None
}

fn serve_slow_hub(data: &Scratch, dir: &Scratch) -> (std::process::Child, std::net::SocketAddr, Stderr) {
    let mut child = wasmhub()
        .args(["serve", "--listen", "127.0.0.1:0", "--plugins"])
        .arg(&dir.0)
        .arg("--data")
        .arg(&data.0)
        .args([
            "--set",
            "server.shutdown_grace_secs=60",
            "--set",
            "limits.timeout_ms=60000",
        ])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start wasmhub serve");
    let (addr, stderr) = crate::support::binary::serving(&mut child, Duration::from_secs(60));
    (child, addr, stderr)
}

/// Starts `adversary.slow` for `ms` on the hub and waits until it runs.
async fn slow_call(
    addr: std::net::SocketAddr,
    ms: u64,
) -> tokio::task::JoinHandle<crate::support::client::ClientResp> {
    let call = json!({"calls": [{"tool": "adversary.slow", "input": {"ms": ms}}]});
    // The plugin loads in the background: wait until the hub lists it.
    crate::support::wait::until_seen(
        "the hub to list the plugin's operations on /health",
        || async move {
            let health = crate::support::client::send(addr, http::Method::GET, "/health", None, &[])
                .await
                .json()
                .await;
            if health["operations"].as_u64().unwrap_or(0) > 0 {
                Ok(())
            } else {
                Err(health)
            }
        },
    )
    .await;
    let request =
        tokio::spawn(async move { crate::support::client::post(addr, "/api/hub/call", &call).await });
    crate::support::wait::in_flight_at(addr, 1).await;
    request
}

#[tokio::test]
async fn serve_finishes_in_flight_calls_on_sigterm_and_exits_0() {
    let dir = plugins(&[("adversary", "adversary")], &[]);
    let data = Scratch::new("sigterm-data");
    let (mut child, addr, _stderr) = serve_slow_hub(&data, &dir);
    let in_flight = slow_call(addr, 1500).await;
    signal(&child, libc::SIGTERM);
    let reply = in_flight.await.expect("the in-flight request task");
    assert_eq!(reply.status, 200);
    let out = reply.json().await;
    assert_eq!(out["results"][0]["result"]["slept_ms"], 1500, "{out}");
    let status = exit_within(&mut child, Duration::from_secs(30)).expect("the hub exits after draining");
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn a_second_signal_exits_without_waiting_for_the_grace() {
    let dir = plugins(&[("adversary", "adversary")], &[]);
    let data = Scratch::new("sigint-data");
    let (mut child, addr, mut stderr) = serve_slow_hub(&data, &dir);
    let _in_flight = slow_call(addr, 50_000).await;
    signal(&child, libc::SIGINT);
    // Draining: the 50 s call holds the hub in its 60 s grace.
    stderr.wait_for("shutting down", Duration::from_secs(30));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the first signal only starts draining"
    );
    signal(&child, libc::SIGINT);
    let status = exit_within(&mut child, Duration::from_secs(20)).expect("the second Ctrl-C exits at once");
    assert_eq!(status.code(), Some(130), "{status:?}");
}

#[test]
fn call_stops_on_ctrl_c() {
    let dir = plugins(&[("adversary", "adversary")], &[]);
    let data = Scratch::new("call-sigint-data");
    let mut child = wasmhub()
        .args(["call", "adversary.slow", r#"{"ms": 50000}"#, "--plugins"])
        .arg(&dir.0)
        .arg("--data")
        .arg(&data.0)
        .args(["--set", "limits.timeout_ms=60000"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start wasmhub call");
    // Signal once the plugins are loaded (compiling the guest takes a while) and
    // the call is about to run.
    let mut stderr = Stderr::capture(&mut child);
    stderr.wait_for("operations from", Duration::from_secs(120));
    signal(&child, libc::SIGINT);
    let status = exit_within(&mut child, Duration::from_secs(30)).expect("call stops on SIGINT");
    assert_eq!(status.code(), Some(1));
    stderr.wait_for("interrupted", Duration::from_secs(10));
}

#[test]
fn the_hub_log_lines_start_with_an_rfc3339_utc_time() {
    use crate::support::binary::{serve, starts_with_timestamp};
    let dir = plugins(&[("adversary", "a")], &[]);
    let data = Scratch::new("timestamps-data");
    let mut hub = serve(&dir.0, &data.0, &[]);
    let listening = hub
        .stderr
        .saw_or_wait_for("listening on http://", Duration::from_secs(60));
    assert!(starts_with_timestamp(&listening), "{listening}");
    // Every line up to the end of the first load, whoever wrote it.
    let seen = hub.stderr.seen();
    assert!(seen.len() >= 3, "{seen:?}");
    for line in seen {
        assert!(starts_with_timestamp(line), "{line}");
    }
    drop(hub);

    // What stops a start is a log line too, as is an unknown WASMHUB_LOG (--locked
    // without a plugins.lock: the hub refuses to start).
    let out = wasmhub()
        .env("WASMHUB_LOG", "loud")
        .args(["serve", "--listen", "127.0.0.1:0", "--locked", "--plugins"])
        .arg(&dir.0)
        .arg("--data")
        .arg(&data.0)
        .output()
        .expect("run wasmhub serve");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        lines[0].contains(" WARN ") && lines[0].contains("ignoring WASMHUB_LOG=\"loud\""),
        "{stderr}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" ERROR ") && l.contains("plugins.lock")),
        "{stderr}"
    );
    for line in lines {
        assert!(starts_with_timestamp(line), "{line}");
    }
}

/// The ids of `GET /api/calls`, newest first.
async fn audited(addr: std::net::SocketAddr) -> Vec<String> {
    let resp = crate::support::client::send(addr, http::Method::GET, "/api/calls?limit=10", None, &[]).await;
    assert_eq!(resp.status, 200);
    let body = resp.json().await;
    let calls = body["calls"].as_array().expect("calls").iter();
    calls.map(|c| c["id"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn an_earlier_versions_audit_table_moves_to_the_log_files_and_calls_outlive_a_kill() {
    let dir = plugins(&[], &["text"]);
    let data = Scratch::new("audit-log");
    // The audit log as earlier versions kept it: the sled table `calls`, one block
    // of records under a [ms][number][records] key.
    {
        let storage = wasmhub::storage::Storage::open(&data.0).unwrap();
        let old = storage.table("calls").unwrap();
        let record = |id: &str| {
            json!({"id": id, "tool": "text.slugify", "caller": "local", "started_ms": 1_000,
                "duration_us": 5, "input_bytes": 2, "output_bytes": 2, "outcome": "ok"})
        };
        let mut key = 2_000u64.to_be_bytes().to_vec();
        key.extend_from_slice(&0u64.to_be_bytes());
        key.extend_from_slice(&2u32.to_be_bytes());
        old.put(&key, &json!([record("call_old0"), record("call_old1")]))
            .unwrap();
        storage.flush().unwrap();
    }
    let mut served = crate::support::binary::serve(&dir.0, &data.0, &[]);
    served
        .stderr
        .saw_or_wait_for("moved 2 records of table calls", Duration::from_secs(30));
    assert_eq!(audited(served.addr).await, ["call_old1", "call_old0"]);
    let call = json!({"calls": [{"tool": "text.slugify", "input": {"text": "Logged"}}]});
    let resp = crate::support::client::post(served.addr, "/api/hub/call", &call).await;
    assert_eq!(resp.status, 200);
    let after = audited(served.addr).await;
    assert_eq!(after.len(), 3, "{after:?}");
    assert_eq!(after[1..], ["call_old1", "call_old0"]);
    // On disk as JSON lines, written before the read was answered.
    let segment = data.path("logs/calls/00000000000000000000.jsonl");
    let lines = std::fs::read_to_string(&segment).unwrap();
    assert_eq!(lines.lines().count(), 3, "{lines}");
    assert!(lines.lines().last().unwrap().contains(&after[0]), "{lines}");
    // Killed (SIGKILL, no shutdown), restarted: every record is back.
    drop(served);
    let restarted = crate::support::binary::serve(&dir.0, &data.0, &[]);
    assert_eq!(audited(restarted.addr).await, after);
}
