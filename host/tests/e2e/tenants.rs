//! Tenants: every chat session, live turn, chat approval and record belongs to the
//! principal that made it. Two tokens (`alice`, `bob`) and an operator (`ops`) walk
//! every route on one hub (sled) and on two replicas sharing PostgreSQL: the other
//! tenant's items answer exactly like missing ones (the same bytes as for an unknown
//! id, 204 from `stream`), listings show only one's own, the owner's work is
//! untouched, the operator sees everything and hands a session over, and a token at
//! its `max_sessions` is refused with an error naming the key.

use crate::support::chat::*;
use crate::support::client::{self, ClientResp};
#[cfg(feature = "postgres")]
use crate::support::hub::Hub;
use crate::support::runtime::Scratch;
use crate::support::upstream::{CHAT, Upstream};
use http::Method;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::Duration;
use wasmhub::config::{Config, TokenConfig};
use wasmhub::llm::UiChunk;

/// `alice`, `bob`, the operator `ops`, and `carol`, who may keep one session.
fn tokens(dir: &Scratch) -> Vec<TokenConfig> {
    let token = |name: &str, operator: bool, max_sessions: Option<u64>| {
        std::fs::write(dir.path(name), format!("secret-{name}")).unwrap();
        TokenConfig {
            name: name.into(),
            secret_file: Some(dir.path(name)),
            allow: vec!["*".into()],
            operator,
            max_sessions,
            ..TokenConfig::default()
        }
    };
    vec![
        token("alice", false, None),
        token("bob", false, None),
        token("ops", true, None),
        token("carol", false, Some(1)),
    ]
}

fn with_tokens(config: &mut Config, dir: &Scratch) {
    config.tokens = tokens(dir);
}

/// One principal's client of one hub.
#[derive(Clone, Copy)]
struct As {
    addr: SocketAddr,
    name: &'static str,
}

impl As {
    async fn send(self, method: Method, path: &str, body: Option<&Value>) -> ClientResp {
        let bearer = format!("Bearer secret-{}", self.name);
        let body = body.map(|b| bytes::Bytes::from(b.to_string()));
        client::send(self.addr, method, path, body, &[("authorization", &bearer)]).await
    }

    async fn get(self, path: &str) -> ClientResp {
        self.send(Method::GET, path, None).await
    }

    async fn json(self, path: &str) -> Value {
        let resp = self.get(path).await;
        assert_eq!(resp.status, 200, "{} GET {path}", self.name);
        resp.json().await
    }

    async fn chat(self, body: &Value) -> ClientResp {
        self.send(Method::POST, "/api/chat", Some(body)).await
    }

    /// The ids of the sessions `path` lists.
    async fn listed(self, path: &str) -> Vec<(String, String)> {
        let list = self.json(path).await;
        list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["id"].as_str().unwrap().into(),
                    s["principal"].as_str().unwrap().into(),
                )
            })
            .collect()
    }

    /// The `caller` of every record `path` answers under `key`.
    async fn callers(self, path: &str, key: &str) -> Vec<String> {
        let page = self.json(path).await;
        page[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key} in {page}"))
            .iter()
            .map(|r| r["caller"].as_str().unwrap().to_string())
            .collect()
    }
}

/// Both join the live turn at `stream` and get the same chunks.
async fn watch_alike(one: As, other: As, stream: &str) {
    let (a, b) = (one.get(stream).await, other.get(stream).await);
    assert_eq!(
        (a.status.as_u16(), b.status.as_u16()),
        (200, 200),
        "{} and {}",
        one.name,
        other.name
    );
    let seen = chunks(a).await;
    assert_eq!(seen, chunks(b).await);
    assert!(
        !seen.iter().any(|c| matches!(c, UiChunk::Abort { .. })),
        "the turn ran to its end"
    );
}

/// A model step that calls `examples.wipe` (destructive: the hub asks first).
fn wipe_step(scope: &str) -> crate::support::upstream::Reply {
    let calls = json!([{ "tool": "examples.wipe", "input": {"scope": scope} }]);
    tool_step(None, &[("call_w", "hub_call", call_args(calls))])
}

/// Asserts there are records and every one is `principal`'s.
fn all_of(callers: &[String], principal: &str) {
    assert!(
        !callers.is_empty() && callers.iter().all(|c| c == principal),
        "{callers:?} should all be {principal}'s"
    );
}

/// Status and body bytes.
async fn answer(resp: ClientResp) -> (u16, Vec<u8>) {
    let status = resp.status.as_u16();
    (status, resp.bytes().await.to_vec())
}

/// The chunks of a turn, up to and including its first text delta.
async fn until_text(resp: &mut ClientResp) {
    while let Some(chunk) = next_chunk(resp).await {
        if matches!(chunk, UiChunk::TextDelta { .. }) {
            return;
        }
    }
    panic!("the turn ended before any text");
}

/// The continuation of session `id` that approves tool call `call` of its last
/// (paused) assistant message, as `addToolApprovalResponse` sends it, read by `who`.
async fn approving(who: As, id: &str, call: &str) -> Value {
    let stored = who.json(&format!("/api/sessions/{id}")).await["messages"]
        .as_array()
        .unwrap()
        .clone();
    let (assistant, history) = stored.split_last().expect("a paused assistant message");
    let mut assistant = assistant.clone();
    for part in assistant["parts"].as_array_mut().unwrap() {
        if part["toolCallId"] == call {
            part["state"] = json!("approval-responded");
            part["approval"]["approved"] = json!(true);
        }
    }
    let mut body = submit(id, [history, &[assistant.clone()]].concat());
    body["messageId"] = assistant["id"].clone();
    body
}

#[tokio::test]
async fn two_tenants_and_an_operator_on_one_hub() {
    let upstream = Upstream::start().await;
    let secrets = Scratch::new("tenants");
    let hub = hub_with(&upstream, plugins(&["examples"]), |c| with_tokens(c, &secrets)).await;
    let (alice, bob, ops) = (
        As {
            addr: hub.addr,
            name: "alice",
        },
        As {
            addr: hub.addr,
            name: "bob",
        },
        As {
            addr: hub.addr,
            name: "ops",
        },
    );
    let a_id = wasmhub::ids::new_id("tenant-a");
    let b_id = wasmhub::ids::new_id("tenant-b");

    upstream.push(text_step("Hello Alice."));
    chunks(alice.chat(&submit(&a_id, vec![user("a1", "I am alice")])).await).await;
    upstream.push(text_step("Hello Bob."));
    chunks(bob.chat(&submit(&b_id, vec![user("b1", "I am bob")])).await).await;

    // Each lists only its own; the operator lists both, or one principal's.
    assert_eq!(
        alice.listed("/api/sessions").await,
        [(a_id.clone(), "alice".into())]
    );
    assert_eq!(bob.listed("/api/sessions").await, [(b_id.clone(), "bob".into())]);
    assert_eq!(bob.listed("/api/sessions?principal=alice").await, []);
    let all = ops.listed("/api/sessions").await;
    assert!(all.contains(&(a_id.clone(), "alice".into())) && all.contains(&(b_id.clone(), "bob".into())));
    assert_eq!(
        ops.listed("/api/sessions?principal=alice").await,
        [(a_id.clone(), "alice".into())]
    );

    // Bob reads, deletes and continues alice's session: each is a missing one.
    let session_path = format!("/api/sessions/{a_id}");
    let foreign_get = answer(bob.get(&session_path).await).await;
    assert_eq!(foreign_get.0, 404);
    let foreign_delete = answer(bob.send(Method::DELETE, &session_path, None).await).await;
    assert_eq!(foreign_delete, foreign_get);
    let before = alice.json(&session_path).await;
    let model_calls = upstream.requests().iter().filter(|r| r.path == CHAT).count();
    let continued = submit(&a_id, vec![user("a1", "I am alice"), user("b2", "bob was here")]);
    assert_eq!(answer(bob.chat(&continued).await).await, foreign_get);
    assert_eq!(
        alice.json(&session_path).await,
        before,
        "alice's session is untouched"
    );
    assert_eq!(
        upstream.requests().iter().filter(|r| r.path == CHAT).count(),
        model_calls
    );
    assert_eq!(before["principal"], "alice");
    assert!(before["storedBytes"].as_u64().unwrap() > 0, "{before}");

    // Alice's live turn: bob cannot watch, continue or delete it, and learns
    // nothing from trying (204 and 404, never 409).
    upstream.push(slow_text_step(
        "one two three four five six",
        Duration::from_millis(100),
    ));
    let mut live = alice
        .chat(&submit(
            &a_id,
            vec![user("a1", "I am alice"), user("a2", "count")],
        ))
        .await;
    assert_eq!(live.status, 200);
    until_text(&mut live).await;
    let stream_path = format!("/api/chat/{a_id}/stream");
    assert_eq!(answer(bob.get(&stream_path).await).await, (204, Vec::new()));
    assert_eq!(answer(bob.chat(&continued).await).await, foreign_get);
    assert_eq!(
        answer(bob.send(Method::DELETE, &session_path, None).await).await,
        foreign_get
    );
    // Bob's stop is the same 204 as for any session, and stops nothing.
    let stop_path = format!("/api/chat/{a_id}/stop");
    assert_eq!(
        answer(bob.send(Method::POST, &stop_path, None).await).await,
        (204, Vec::new())
    );
    // An operator watches any live turn, and sees what alice sees.
    watch_alike(ops, alice, &stream_path).await;
    while next_chunk(&mut live).await.is_some() {}

    // A chat approval is decided only by the session's principal.
    upstream.push(wipe_step("cache"));
    let history = alice.json(&session_path).await["messages"]
        .as_array()
        .unwrap()
        .clone();
    let mut asked = history.clone();
    asked.push(user("a3", "wipe the cache"));
    let paused = chunks(alice.chat(&submit(&a_id, asked)).await).await;
    assert!(
        paused
            .iter()
            .any(|c| matches!(c, UiChunk::ToolApprovalRequest { .. })),
        "{:?}",
        types(&paused)
    );
    let approve = approving(alice, &a_id, "call_w").await;
    assert_eq!(
        answer(bob.chat(&approve).await).await,
        foreign_get,
        "bob cannot approve"
    );
    let waiting = alice.json(&session_path).await;
    assert!(
        waiting["messages"].to_string().contains("approval-requested"),
        "still waiting"
    );
    let wipes = |calls: Value| -> Vec<Value> {
        calls["calls"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["tool"] == "examples.wipe")
            .cloned()
            .collect()
    };
    assert!(wipes(ops.json("/api/calls?limit=1000&principal=alice").await).is_empty());
    upstream.push(text_step("Wiped."));
    chunks(alice.chat(&approve).await).await;
    let wiped = ended_call(&hub, "examples.wipe").await;
    assert_eq!(wiped.caller, "alice");

    // Records: one's own; the operator's are everyone's, or one principal's.
    bob.send(
        Method::POST,
        "/api/hub/call",
        Some(&json!({"calls": [{"tool": "examples.echo", "input": {"text": "bob's"}}]})),
    )
    .await
    .bytes()
    .await;
    all_of(&bob.callers("/api/calls?limit=1000", "calls").await, "bob");
    let none = bob
        .callers("/api/calls?limit=1000&principal=alice", "calls")
        .await;
    assert!(none.is_empty(), "{none:?}");
    all_of(&alice.callers("/api/calls?limit=1000", "calls").await, "alice");
    assert_eq!(wipes(alice.json("/api/calls?limit=1000").await).len(), 1);
    let everyone = ops.callers("/api/calls?limit=1000", "calls").await;
    assert!(everyone.iter().any(|c| c == "alice") && everyone.iter().any(|c| c == "bob"));
    all_of(
        &ops.callers("/api/calls?limit=1000&principal=alice", "calls")
            .await,
        "alice",
    );
    all_of(&bob.callers("/api/accounting?limit=1000", "records").await, "bob");
    let none = bob
        .callers("/api/accounting?limit=1000&principal=alice", "records")
        .await;
    assert!(none.is_empty(), "{none:?}");
    all_of(
        &ops.callers("/api/accounting?limit=1000&principal=alice", "records")
            .await,
        "alice",
    );

    // The operator: reads anyone's session, does not continue it, hands one over.
    assert_eq!(ops.json(&session_path).await["principal"], "alice");
    let not_owner = ops.chat(&continued).await;
    assert_eq!(not_owner.status, 403);
    assert_eq!(not_owner.json().await["error"]["code"], "not_owner");
    let hand_over = format!("/api/sessions/{b_id}/handover");
    let by_bob = bob
        .send(Method::POST, &hand_over, Some(&json!({"principal": "bob"})))
        .await;
    assert_eq!(by_bob.status, 403, "only operators hand over");
    let typo = ops
        .send(Method::POST, &hand_over, Some(&json!({"principal": "alcie"})))
        .await;
    assert_eq!(typo.status, 400);
    assert_eq!(typo.json().await["error"]["code"], "unknown_principal");
    let given = ops
        .send(Method::POST, &hand_over, Some(&json!({"principal": "alice"})))
        .await;
    assert_eq!(given.status, 200);
    assert_eq!(given.json().await["principal"], "alice");
    assert_eq!(bob.get(&format!("/api/sessions/{b_id}")).await.status, 404);
    assert_eq!(
        alice.json(&format!("/api/sessions/{b_id}")).await["messages"][0]["id"],
        "b1"
    );

    // Once alice's session is gone, its id answers bob byte for byte as before.
    assert_eq!(alice.send(Method::DELETE, &session_path, None).await.status, 204);
    assert_eq!(answer(bob.get(&session_path).await).await, foreign_get);
    assert_eq!(
        answer(bob.send(Method::DELETE, &session_path, None).await).await,
        foreign_get
    );
    assert_eq!(answer(alice.get(&session_path).await).await, foreign_get);
}

#[tokio::test]
async fn a_token_at_its_session_limit_is_refused_naming_the_key() {
    let upstream = Upstream::start().await;
    let secrets = Scratch::new("tenants-quota");
    let hub = hub_with(&upstream, plugins(&[]), |c| with_tokens(c, &secrets)).await;
    let carol = As {
        addr: hub.addr,
        name: "carol",
    };
    let first = wasmhub::ids::new_id("quota");
    upstream.push(text_step("One."));
    chunks(carol.chat(&submit(&first, vec![user("c1", "one")])).await).await;
    let second = carol
        .chat(&submit(&wasmhub::ids::new_id("quota"), vec![user("c2", "two")]))
        .await;
    assert_eq!(second.status, 403);
    let error = second.json().await["error"].clone();
    assert_eq!(error["code"], "quota_exceeded");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("tokens[carol].max_sessions (1)"), "{message}");
    // Her one session goes on.
    upstream.push(text_step("Still here."));
    let more = submit(&first, vec![user("c1", "one"), user("c3", "and again")]);
    chunks(carol.chat(&more).await).await;
    let stored = carol.json(&format!("/api/sessions/{first}")).await;
    assert_eq!(stored["messageCount"], 4);
}

/// Two replicas on one PostgreSQL database, each with the same tokens.
#[cfg(feature = "postgres")]
async fn two_replicas(upstream: &Upstream, secrets: &Scratch) -> (Hub, Hub) {
    let mut config = chat_config(upstream, plugins(&["examples"]));
    config.storage.backend = wasmhub::config::StorageBackend::Postgres;
    config.storage.url_env = "WASMHUB_TEST_DATABASE_URL".into();
    with_tokens(&mut config, secrets);
    let open = || async {
        wasmhub::storage::Backend::open(&config)
            .await
            .expect("the test database (WASMHUB_TEST_DATABASE_URL)")
    };
    let (a, b) = (open().await, open().await);
    let replicas = (hub_on(config.clone(), a).await, hub_on(config.clone(), b).await);
    for hub in [&replicas.0, &replicas.1] {
        let api = &hub.app.hub;
        crate::support::wait::until("the plugins active", || async move {
            api.plugins()
                .iter()
                .all(|p| p.state == wasmhub::hub::PluginStatus::Active)
                .then_some(())
        })
        .await;
    }
    replicas
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn across_replicas_another_tenants_session_and_turn_are_missing() {
    let upstream = Upstream::start().await;
    let secrets = Scratch::new("tenants-pg");
    let (one, two) = two_replicas(&upstream, &secrets).await;
    let alice = As {
        addr: one.addr,
        name: "alice",
    };
    let (bob, ops, alice_there) = (
        As {
            addr: two.addr,
            name: "bob",
        },
        As {
            addr: two.addr,
            name: "ops",
        },
        As {
            addr: two.addr,
            name: "alice",
        },
    );
    let a_id = wasmhub::ids::new_id("tenant-pg");
    let session_path = format!("/api/sessions/{a_id}");
    upstream.push(text_step("Hello Alice."));
    chunks(alice.chat(&submit(&a_id, vec![user("a1", "I am alice")])).await).await;
    let foreign = answer(bob.get(&session_path).await).await;
    assert_eq!(foreign.0, 404);
    assert!(
        !bob.listed("/api/sessions")
            .await
            .iter()
            .any(|(id, _)| *id == a_id)
    );
    assert!(
        ops.listed("/api/sessions?principal=alice")
            .await
            .contains(&(a_id.clone(), "alice".into()))
    );

    // Her turn runs on the first replica; bob on the second cannot see it.
    upstream.push(slow_text_step(
        "one two three four five six",
        Duration::from_millis(100),
    ));
    let history = vec![user("a1", "I am alice"), user("a2", "count")];
    let mut live = alice.chat(&submit(&a_id, history.clone())).await;
    assert_eq!(live.status, 200);
    until_text(&mut live).await;
    let stream_path = format!("/api/chat/{a_id}/stream");
    assert_eq!(answer(bob.get(&stream_path).await).await, (204, Vec::new()));
    assert_eq!(
        answer(bob.chat(&submit(&a_id, history.clone())).await).await,
        foreign
    );
    assert_eq!(
        answer(bob.send(Method::DELETE, &session_path, None).await).await,
        foreign
    );
    // The operator follows it from the other replica, and so does alice.
    watch_alike(ops, alice_there, &stream_path).await;
    while next_chunk(&mut live).await.is_some() {}

    // A chat approval issued on one replica: bob on the other cannot answer it;
    // alice there can.
    upstream.push(wipe_step("pg"));
    let mut asked = alice.json(&session_path).await["messages"]
        .as_array()
        .unwrap()
        .clone();
    asked.push(user("a3", "wipe"));
    chunks(alice.chat(&submit(&a_id, asked)).await).await;
    let approve = approving(alice_there, &a_id, "call_w").await;
    assert_eq!(answer(bob.chat(&approve).await).await, foreign);
    upstream.push(text_step("Wiped."));
    chunks(alice_there.chat(&approve).await).await;
    let calls = bob.callers("/api/calls?limit=1000", "calls").await;
    assert!(calls.iter().all(|c| c == "bob"), "{calls:?}");
    let hers = ops.json("/api/calls?limit=1000&principal=alice").await;
    assert!(
        hers["calls"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["tool"] == "examples.wipe"),
        "{hers}"
    );

    // A stop asked on the other replica: bob's stops nothing, the operator's
    // reaches alice's turn on the first.
    upstream.push(slow_text_step(&"word ".repeat(200), Duration::from_millis(100)));
    let mut long = alice.chat(&submit(&a_id, vec![user("a4", "talk")])).await;
    assert_eq!(long.status, 200);
    until_text(&mut long).await;
    let stop_path = format!("/api/chat/{a_id}/stop");
    assert_eq!(bob.send(Method::POST, &stop_path, None).await.status, 204);
    assert_eq!(ops.send(Method::POST, &stop_path, None).await.status, 204);
    let mut reason = None;
    while let Some(chunk) = next_chunk(&mut long).await {
        if let UiChunk::Abort { reason: why } = chunk {
            reason = why;
        }
    }
    assert_eq!(reason.as_deref(), Some("stopped on request"));
    assert_eq!(alice.send(Method::DELETE, &session_path, None).await.status, 204);
    assert_eq!(answer(bob.get(&session_path).await).await, foreign);
}
