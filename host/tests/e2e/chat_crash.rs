//! Crash safety of sessions with the real binary: `wasmhub serve` is SIGKILLed in the
//! middle of a turn, after one step was reported finished; restarted on the same
//! data folder it opens the store cleanly and serves the session with that step
//! intact, and the conversation goes on.

use crate::support::chat::*;
use crate::support::client;
use crate::support::upstream::{Frame, Reply, Upstream};
use serde_json::json;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use wasmhub::llm::UiChunk;

/// `wasmhub serve` on a free loopback port; returns the child and its address.
fn spawn_hub(config: &Path, data: &Path, plugins: &Path) -> (Child, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_wasmhub"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(config)
        .arg("--data")
        .arg(data)
        .arg("--plugins")
        .arg(plugins)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start wasmhub serve");
    let addr = crate::support::binary::listen_addr(&mut child, Duration::from_secs(120));
    (child, addr)
}

#[tokio::test]
async fn a_killed_hub_restarts_with_every_finished_step_stored() {
    let upstream = Upstream::start().await;
    let dir = crate::support::runtime::Scratch::new("chat-crash");
    let config = dir.path("wasmhub.toml");
    std::fs::write(
        &config,
        format!(
            "[[providers]]\nname = \"scripted\"\nbase_url = \"{}\"\nmodels = [\"m*\"]\nmax_retries = 0\n\n[agent]\nmodel = \"{MODEL}\"\n",
            upstream.base_url()
        ),
    )
    .unwrap();
    let data = dir.path("data");
    let plugins = plugins(&[]);

    let (mut child, addr) = spawn_hub(&config, &data, &plugins);
    upstream.push(tool_step(
        Some("Checking."),
        &[("call_l", "hub_list", "{}".into())],
    ));
    upstream.push(Reply::sse(vec![
        Frame::Data(json!({"choices": [{"index": 0, "delta": {"content": "half an ans"}}]}).to_string()),
        Frame::Hang,
    ]));
    let mut resp = post_chat(addr, &submit("chat-crash", vec![user("u1", "what can you do?")])).await;
    let mut finished_steps = 0;
    while let Some(c) = next_chunk(&mut resp).await {
        match c {
            UiChunk::FinishStep => finished_steps += 1,
            UiChunk::TextDelta { delta, .. } if finished_steps == 1 && delta == "half an ans" => break,
            _ => {}
        }
    }
    assert_eq!(finished_steps, 1);
    child.kill().expect("SIGKILL the hub");
    child.wait().unwrap();
    drop(resp);

    let (mut child, addr) = spawn_hub(&config, &data, &plugins);
    let list = client::send(addr, http::Method::GET, "/api/sessions", None, &[])
        .await
        .json()
        .await;
    assert_eq!(list["sessions"][0]["id"], "chat-crash", "{list}");
    let s = session(addr, "chat-crash").await;
    assert_eq!(s["messageCount"], 2, "{s}");
    let a = &s["messages"][1];
    assert_eq!(a["parts"][0]["type"], "step-start");
    assert_eq!(a["parts"][1]["text"], "Checking.");
    assert_eq!(a["parts"][2]["type"], "tool-hub_list");
    assert_eq!(
        a["parts"][2]["state"], "output-available",
        "the finished step survived: {a}"
    );
    assert_eq!(a["parts"][2]["output"]["operations"].as_array().unwrap().len(), 5);

    // The conversation goes on after the restart.
    upstream.push(text_step("Back again."));
    let mut msgs = s["messages"].as_array().unwrap().clone();
    msgs.push(user("u2", "are you there?"));
    let c = chunks(post_chat(addr, &submit("chat-crash", msgs)).await).await;
    assert!(matches!(c.last(), Some(UiChunk::Finish { .. })));
    assert_eq!(session(addr, "chat-crash").await["messageCount"], 4);
    child.kill().unwrap();
    child.wait().unwrap();
}
