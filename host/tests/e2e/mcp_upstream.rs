//! A hub as another hub's external MCP server. The hub's own MCP server speaks
//! the stateless 2026-07-28 revision on `/mcp` and on `wasmhub mcp --stdio`, so
//! the hub's client probes `server/discover`, finds that revision, and uses it
//! (no `initialize`, no session, `_meta` and routing headers on every request)
//! over Streamable HTTP and over stdio; the scripted handshake-era server of
//! `mcp_servers` falls back to `initialize`.

use crate::mcp_servers::{active, call, server, wasm_answers};
use crate::support::hub::{plugins, serve};
use crate::support::runtime::Scratch;
use serde_json::json;

#[tokio::test]
async fn a_hub_upstream_is_used_over_the_stateless_revision() {
    let up_dir = plugins(&[("examples", "examples")], &[]);
    let upstream = serve(&up_dir, |_| {}).await;
    let up_data = Scratch::new("mcp-upstream-stdio");
    // The upstream's hub_call is destructive by its annotations; this hub's
    // operator trusts it (the upstream applies its own policy).
    let trusted = "hints = { hub_call = { destructive = false } }";
    let over_http = server(
        "up",
        &format!(
            "transport = \"http\"\nurl = \"http://{}/mcp\"\n{trusted}",
            upstream.addr
        ),
    );
    let over_stdio = server(
        "upstdio",
        &format!(
            "transport = \"stdio\"\ncommand = \"{}\"\nargs = [\"mcp\", \"--stdio\", \"--plugins\", \"{}\", \"--data\", \"{}\"]\n{trusted}",
            env!("CARGO_BIN_EXE_wasmhub"),
            up_dir.0.display(),
            up_data.0.display()
        ),
    );
    let dir = plugins(&[("examples", "examples")], &[]);
    let s = serve(&dir, |c| c.mcp_servers = vec![over_http, over_stdio]).await;
    for name in ["up", "upstdio"] {
        let entry = active(&s, name, 0).await;
        assert_eq!(entry["protocol"], "2026-07-28", "{entry}");
        let ops = entry["operations"].to_string();
        for tool in ["hub_list", "hub_search", "hub_schema", "hub_call"] {
            assert!(ops.contains(&format!("\"{name}.{tool}\"")), "{ops}");
        }
        let batch = json!({"calls": [{"tool": "examples.echo", "input": {"text": "two hubs"}}]});
        let answer = call(&s, None, &format!("{name}.hub_call"), batch).await;
        assert_eq!(answer["ok"], true, "{answer}");
        let inner = &answer["result"]["results"][0];
        assert_eq!(inner["ok"], true, "{answer}");
        assert_eq!(inner["result"]["text"], "two hubs", "{answer}");
        let schema = call(
            &s,
            None,
            &format!("{name}.hub_schema"),
            json!({"tool": "examples.echo"}),
        )
        .await;
        assert_eq!(schema["result"]["tool"], "examples.echo", "{schema}");
    }
    // The upstream's own policy still asks about its destructive operation: the
    // hub has no person to ask, and says so.
    let batch = json!({"calls": [{"tool": "examples.wipe", "input": {}}]});
    let wipe = call(&s, None, "up.hub_call", batch).await;
    assert_eq!(wipe["ok"], false, "{wipe}");
    let message = wipe["error"]["message"].as_str().unwrap();
    assert!(message.contains("\"approval_required\""), "{message}");
    wasm_answers(&s).await;

    // A handshake-era server is still reached through initialize.
    let fake = crate::mcp_servers::stdio_server("fake", "");
    let old = serve(&dir, |c| c.mcp_servers = vec![fake]).await;
    let entry = active(&old, "fake", 0).await;
    assert_eq!(entry["protocol"], "2025-11-25", "{entry}");
}
