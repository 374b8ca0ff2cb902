//! `serve --config FILE` follows the file's `[[mcp_servers]]` (polled like the
//! plugins folder): a removed server stops (its process gone), an added one
//! starts, a changed one restarts (a new process) while an unchanged one keeps
//! its process, and a call still running on the changed one fails saying why. A
//! file that no longer parses is logged and changes nothing.

use crate::mcp_servers::script;
use crate::support::binary::serve_with_config;
use crate::support::client::{post, send};
use crate::support::hub::plugins;
use crate::support::runtime::Scratch;
use crate::support::wait::{PATIENCE, until, until_seen};
use http::Method;
use serde_json::{Value, json};
use std::net::SocketAddr;

/// A `[[mcp_servers]]` entry running the fake server over stdio.
fn entry(name: &str, extra: &str) -> String {
    format!(
        "[[mcp_servers]]\nname = \"{name}\"\ntransport = \"stdio\"\ncommand = \"python3\"\nargs = [\"{}\"]\nrestart_min_ms = 50\n{extra}\n",
        script()
    )
}

/// Every server's entry of `GET /api/mcp-servers`, by name.
async fn servers(addr: SocketAddr) -> Vec<(String, Value)> {
    let all = send(addr, Method::GET, "/api/mcp-servers", None, &[])
        .await
        .json()
        .await;
    let list = all["servers"].as_array().cloned().unwrap_or_default();
    list.into_iter()
        .map(|e| (e["name"].as_str().unwrap_or_default().to_string(), e))
        .collect()
}

/// Waits until the servers are exactly `names`, in order, each active; their pids.
async fn active(addr: SocketAddr, names: &[&str]) -> Vec<u64> {
    until_seen(&format!("{names:?} active"), || async {
        let all = servers(addr).await;
        let listed: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
        let pids: Vec<u64> = all.iter().filter_map(|(_, e)| e["pid"].as_u64()).collect();
        let ready =
            listed == names && all.iter().all(|(_, e)| e["state"] == "active") && pids.len() == names.len();
        if ready { Ok(pids) } else { Err(json!(all)) }
    })
    .await
}

fn alive(pid: u64) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test]
async fn serve_follows_its_config_files_mcp_servers() {
    let dir = plugins(&[], &[]);
    let data = Scratch::new("mcp-reload-data");
    let scratch = Scratch::new("mcp-reload");
    let file = scratch.path("wasmhub.toml");
    let calls = scratch.path("calls");
    let logged = format!("env = {{ CALL_LOG = \"{}\" }}", calls.display());
    let first = [entry("keep", ""), entry("gone", ""), entry("change", &logged)];
    std::fs::write(&file, first.concat()).unwrap();
    let mut served = serve_with_config(&dir.0, &data.0, &file);
    let addr = served.addr;
    let before = active(addr, &["keep", "gone", "change"]).await;

    // A call that stays on the server to be changed.
    let hang = tokio::spawn(async move {
        let body = json!({ "calls": [{ "tool": "change.hang", "input": {} }] });
        post(addr, "/api/hub/call", &body).await.json().await["results"][0].clone()
    });
    until("the hang at the server", || async {
        std::fs::read_to_string(&calls)
            .ok()
            .filter(|log| log.contains("hang"))
    })
    .await;

    let second = [
        entry("keep", ""),
        entry("change", &format!("{logged}\ncall_timeout_ms = 50000")),
        entry("new", ""),
    ];
    std::fs::write(&file, second.concat()).unwrap();
    let after = active(addr, &["keep", "change", "new"]).await;
    let hang = hang.await.unwrap();
    let message = hang["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("its [[mcp_servers]] entry changed (configuration reloaded)"),
        "{hang}"
    );
    assert_eq!(after[0], before[0], "the unchanged server keeps its process");
    assert_ne!(after[1], before[2], "the changed server was restarted");
    assert!(!alive(before[1]), "the removed server's process is gone");
    assert!(!alive(before[2]), "the changed server's old process is gone");
    served.stderr.saw_or_wait_for(
        "[[mcp_servers]] applied (stopped: gone; started: new; restarted: change)",
        PATIENCE,
    );
    let echo = json!({ "calls": [{ "tool": "new.echo", "input": {"text": "added"} }] });
    let answer = post(addr, "/api/hub/call", &echo).await.json().await;
    assert_eq!(
        answer["results"][0]["result"],
        json!({"text": "added"}),
        "{answer}"
    );

    // A broken file changes nothing.
    std::fs::write(&file, "[[mcp_servers]]\nname = 1\n").unwrap();
    let line = served.stderr.saw_or_wait_for("cannot be used", PATIENCE);
    assert!(line.contains(&file.display().to_string()), "{line}");
    assert_eq!(active(addr, &["keep", "change", "new"]).await, after);
}
