//! A client that drops a non-streamed one-off agent request mid-turn (Chat
//! Completions and Messages naming an agent, Messages in hub-tools mode, `POST
//! /v1/agents/{name}`): the turn stops (its upstream request is cancelled) and its
//! temporary session is deleted, so the session list does not grow.

use crate::support::chat::{MODEL, hub_alone, plugins};
use crate::support::upstream::{Frame, Reply, Upstream};
use crate::support::wait;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use wasmhub::config::{AgentProfileConfig, ModelChoice};

/// Sends `body` to `path` as one HTTP/1.1 request on a connection of its own,
/// which the caller closes by dropping it (a client going away mid-request).
async fn open_request(
    addr: std::net::SocketAddr,
    path: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> tokio::net::TcpStream {
    let body = body.to_string();
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(format!("{head}\r\n{body}").as_bytes())
        .await
        .unwrap();
    stream
}

/// A surface's name, its route, the request body and its extra headers.
type Case = (
    &'static str,
    &'static str,
    Value,
    &'static [(&'static str, &'static str)],
);

async fn sessions(hub: &crate::support::hub::Hub) -> Vec<String> {
    let listed = hub
        .app
        .agent
        .list_sessions(&wasmhub::hub::Visible::All)
        .await
        .unwrap();
    listed.into_iter().map(|s| s.id).collect()
}

#[tokio::test]
async fn a_dropped_non_streamed_one_off_request_stops_its_turn_and_leaves_no_session() {
    let upstream = Upstream::start().await;
    // A store of its own: the test counts every session.
    let hub = hub_alone(&upstream, plugins(&[]), |c| {
        c.agents = vec![AgentProfileConfig {
            name: "holder".into(),
            model: Some(ModelChoice::One(MODEL.into())),
            ..AgentProfileConfig::default()
        }];
    })
    .await;
    let user = json!([{"role": "user", "content": "hold on"}]);
    let cases: [Case; 4] = [
        (
            "Chat Completions",
            "/v1/chat/completions",
            json!({"model": "holder", "messages": user}),
            &[],
        ),
        (
            "Messages",
            "/v1/messages",
            json!({"model": "holder", "max_tokens": 100, "messages": user}),
            &[],
        ),
        (
            "Messages, hub-tools mode",
            "/v1/messages",
            json!({"model": MODEL, "max_tokens": 100, "messages": user}),
            &[("x-wasmhub-tools", "hub")],
        ),
        ("REST", "/v1/agents/holder", json!({"input": "hold on"}), &[]),
    ];
    for (i, (surface, path, body, headers)) in cases.into_iter().enumerate() {
        // The model holds its answer until the hub goes away.
        upstream.push(Reply::sse(vec![Frame::Hang]));
        let connection = open_request(hub.addr, path, &body, headers).await;
        wait::until(&format!("{surface}: the turn to reach the model"), || async {
            (upstream.requests().len() == i + 1).then_some(())
        })
        .await;
        let live = sessions(&hub).await;
        assert_eq!(live.len(), 1, "{surface}: one temporary session: {live:?}");
        drop(connection);
        assert!(
            upstream.wait_cancelled(i + 1, wait::PATIENCE).await,
            "{surface}: the turn stopped, cancelling its model request"
        );
        wait::until_seen(
            &format!("{surface}: the temporary session to be deleted"),
            || async {
                let left = sessions(&hub).await;
                if left.is_empty() { Ok(()) } else { Err(left) }
            },
        )
        .await;
    }
}
