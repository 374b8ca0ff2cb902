//! An MCP server over a WebSocket (`transport = "websocket"`): the scripted
//! server's `--ws` mode (RFC 6455 written by hand in Python: a ping first,
//! messages split into fragments) serves its tools through the hub; the
//! configured header goes with the opening handshake, the ping is answered, a
//! message past `max_message_kb` closes the connection with its reason and the
//! server is reconnected, and stopping the servers sends a close frame (1000).

use crate::mcp_servers::{active, call, listening_fake, server, wasm_answers};
use crate::support::hub::{plugins, serve};
use crate::support::runtime::Scratch;
use crate::support::wait::until;
use serde_json::json;

#[tokio::test]
async fn a_server_over_a_websocket_serves_its_tools() {
    let dir = plugins(&[("examples", "examples")], &[]);
    let scratch = Scratch::new("mcp-ws");
    let portfile = scratch.path("port");
    let log = scratch.path("ws.log");
    let (mut child, port) = listening_fake("--ws", &portfile, ("WS_LOG", &log)).await;
    let config = server(
        "ws",
        &format!(
            "transport = \"websocket\"\nurl = \"ws://127.0.0.1:{port}/mcp?key=hidden\"\nheaders = {{ Authorization = \"env:PATH\" }}\nmax_message_kb = 64\nrestart_min_ms = 50"
        ),
    );
    let s = serve(&dir, |c| c.mcp_servers = vec![config]).await;
    let entry = active(&s, "ws", 0).await;
    assert_eq!(entry["transport"], "websocket");
    assert_eq!(
        entry["target"],
        format!("ws://127.0.0.1:{port}/mcp"),
        "no query: {entry}"
    );
    let echo = call(&s, None, "ws.echo", json!({"text": "over a websocket"})).await;
    assert_eq!(echo["result"], json!({"text": "over a websocket"}), "{echo}");
    let add = call(&s, None, "ws.add", json!({"a": 20, "b": 22})).await;
    assert_eq!(add["result"], json!({"sum": 42}), "{add}");
    let seen = std::fs::read_to_string(&log).unwrap();
    assert!(seen.starts_with("protocol mcp auth yes\npong hello\n"), "{seen}");

    let giant = call(&s, None, "ws.giant", json!({})).await;
    let message = giant["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("larger than max_message_kb (64 KiB)"), "{giant}");
    wasm_answers(&s).await;
    active(&s, "ws", 1).await;
    let again = call(&s, None, "ws.echo", json!({"text": "reconnected"})).await;
    assert_eq!(again["result"], json!({"text": "reconnected"}), "{again}");

    s.hub.app.hub.stop_mcp_servers().await;
    until("the close frame at the server", || async {
        std::fs::read_to_string(&log)
            .ok()
            .filter(|l| l.contains("close 1000"))
    })
    .await;
    child.kill().unwrap();
    child.wait().unwrap();
}
