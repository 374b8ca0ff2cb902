//! Helpers of the chat tests: the example plugins they call (calc, text), OpenAI
//! replies that make tool calls, a hub with the agent configured against the
//! scripted upstream, reading a chat stream as strictly parsed UI chunks, and a
//! session's accounting records.

use crate::support::client::{self, ClientResp};
use crate::support::hub::{self, Hub};
use crate::support::upstream::{Frame, Reply, Upstream};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;
use wasmhub::config::Config;
use wasmhub::llm::UiChunk;

pub const MODEL: &str = "scripted/m1";

/// A folder holding the built calc and text plugins (and `extra` test guests),
/// fresh per call; the plugins come from `dist/plugins`, kept current by
/// `support::hub::example`.
pub fn plugins(extra: &[&str]) -> PathBuf {
    let dir = scratch_root().join(wasmhub::ids::new_id("plugins"));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["calc", "text"] {
        std::fs::copy(
            crate::support::hub::example(name),
            dir.join(format!("{name}.wasm")),
        )
        .unwrap();
    }
    for guest in extra {
        std::fs::copy(
            crate::support::runtime::guest(guest),
            dir.join(format!("{guest}.wasm")),
        )
        .unwrap();
    }
    dir
}

/// This process's folder for chat test plugins and the chat store, removed when
/// the process exits.
fn scratch_root() -> &'static PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| crate::support::runtime::process_scratch("chat"))
}

/// One store for every chat test hub of this process, so each plugin is compiled
/// once (the compiled-plugin cache lives in the store); sessions do not collide
/// because every test uses its own chat ids.
fn shared_storage() -> wasmhub::storage::Storage {
    static STORE: OnceLock<wasmhub::storage::Storage> = OnceLock::new();
    STORE
        .get_or_init(|| {
            wasmhub::storage::Storage::open(&scratch_root().join("store"))
                .expect("the shared chat test store")
        })
        .clone()
}

/// The configuration of a chat test hub talking to `upstream`.
pub fn chat_config(upstream: &Upstream, plugins_dir: PathBuf) -> Config {
    let mut config = Config {
        providers: vec![hub::provider(
            "scripted",
            &upstream.base_url(),
            &["m*"],
            "max_retries = 0",
        )],
        plugins_dir,
        ..Config::default()
    };
    config.agent.model = Some(MODEL.into());
    config
}

/// A hub for `config` whose stores are all in `backend`.
#[cfg(feature = "postgres")]
pub async fn hub_on(config: Config, backend: wasmhub::storage::Backend) -> Hub {
    hub::start_on(config, backend).await
}

/// A hub whose agent talks to `upstream`, with the plugins in `plugins_dir`.
pub async fn hub_with(upstream: &Upstream, plugins_dir: PathBuf, tune: impl FnOnce(&mut Config)) -> Hub {
    hub_on_store(upstream, plugins_dir, tune, shared_storage()).await
}

/// As [`hub_with`], on a store of its own (a test that counts every session).
pub async fn hub_alone(upstream: &Upstream, plugins_dir: PathBuf, tune: impl FnOnce(&mut Config)) -> Hub {
    let store = wasmhub::storage::Storage::temporary().expect("a temporary store");
    hub_on_store(upstream, plugins_dir, tune, store).await
}

async fn hub_on_store(
    upstream: &Upstream,
    plugins_dir: PathBuf,
    tune: impl FnOnce(&mut Config),
    store: wasmhub::storage::Storage,
) -> Hub {
    let mut config = chat_config(upstream, plugins_dir);
    tune(&mut config);
    let hub = hub::start_with_storage(config, store).await;
    // The plugins folder loads in the background: wait for its operations.
    let api = &hub.app.hub;
    crate::support::wait::until("the plugins active", || async move {
        let plugins = api.plugins();
        (!plugins.is_empty()
            && plugins
                .iter()
                .all(|p| p.state == wasmhub::hub::PluginStatus::Active))
        .then_some(())
    })
    .await;
    hub
}

fn chunk(delta: Value, finish: Option<&str>) -> Frame {
    Frame::Data(
        json!({"id": "c", "object": "chat.completion.chunk", "model": "m1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            .to_string(),
    )
}

fn usage(input: u64, output: u64) -> Frame {
    Frame::Data(
        json!({"id": "c", "object": "chat.completion.chunk", "model": "m1", "choices": [],
            "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}})
        .to_string(),
    )
}

/// A model step that says `text` (if any) and calls `calls` = `(id, name, arguments
/// text)`, each call's arguments in two fragments.
pub fn tool_step(text: Option<&str>, calls: &[(&str, &str, String)]) -> Reply {
    let mut frames = vec![chunk(
        json!({"role": "assistant", "content": text.unwrap_or("")}),
        None,
    )];
    for (index, (id, name, args)) in calls.iter().enumerate() {
        let cut = args.len() / 2;
        let cut = (0..=cut).rev().find(|i| args.is_char_boundary(*i)).unwrap_or(0);
        frames.push(chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": &args[..cut]}}]}),
            None,
        ));
        frames.push(chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": &args[cut..]}}]}),
            None,
        ));
    }
    frames.push(chunk(json!({}), Some("tool_calls")));
    frames.push(usage(100, 10));
    frames.push(Frame::Data("[DONE]".into()));
    Reply::sse(frames)
}

/// A model step that calls the `adversary` guest's `slow` operation for 30 s in one
/// `hub_call` (id `call_slow`): a tool call still running when a client leaves.
pub fn slow_call_step() -> Reply {
    tool_step(
        None,
        &[(
            "call_slow",
            "hub_call",
            call_args(json!([{"tool": "adversary.slow", "input": {"ms": 30000}}])),
        )],
    )
}

/// The audit record of the call to `tool`, once it ended.
pub async fn ended_call(hub: &Hub, tool: &str) -> wasmhub::hub::CallRecord {
    let calls = &hub.app.hub;
    crate::support::wait::until(
        &format!("the call to {tool} to be recorded as ended"),
        || async move {
            let recorded = calls.calls(10, &wasmhub::hub::Visible::All).unwrap();
            recorded.into_iter().find(|r| r.tool == tool)
        },
    )
    .await
}

/// A model step that answers `text` in a few deltas.
pub fn text_step(text: &str) -> Reply {
    let mut frames = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    for piece in text.split_inclusive(' ') {
        frames.push(chunk(json!({"content": piece}), None));
    }
    frames.push(chunk(json!({}), Some("stop")));
    frames.push(usage(100, 10));
    frames.push(Frame::Data("[DONE]".into()));
    Reply::sse(frames)
}

/// `text_step` with `delay` before every frame.
pub fn slow_text_step(text: &str, delay: Duration) -> Reply {
    let mut reply = text_step(text);
    if let crate::support::upstream::ReplyBody::Sse(frames) = &mut reply.body {
        *frames = frames.drain(..).flat_map(|f| [Frame::Delay(delay), f]).collect();
    }
    reply
}

pub fn user(id: &str, text: &str) -> Value {
    json!({"id": id, "role": "user", "parts": [{"type": "text", "text": text}]})
}

pub fn submit(chat: &str, messages: Vec<Value>) -> Value {
    json!({"id": chat, "trigger": "submit-message", "messages": messages})
}

pub async fn post_chat(addr: SocketAddr, body: &Value) -> ClientResp {
    client::post(addr, "/api/chat", body).await
}

/// The next UI chunk of a chat stream, parsed as strictly as the AI SDK client
/// does (unknown types, missing or extra keys fail the test); `None` at `[DONE]`
/// or the end of the body.
pub async fn next_chunk(resp: &mut ClientResp) -> Option<UiChunk> {
    let data = resp.next_event().await?;
    if data == "[DONE]" {
        return None;
    }
    Some(serde_json::from_str(&data).unwrap_or_else(|e| panic!("a chunk useChat would reject ({e}): {data}")))
}

/// Every chunk of a chat stream; the stream must end with `[DONE]`.
pub async fn chunks(resp: ClientResp) -> Vec<UiChunk> {
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("x-vercel-ai-ui-message-stream"), Some("v1"));
    let (events, _) = resp.events(Duration::from_secs(30)).await;
    assert_eq!(
        events.last().map(String::as_str),
        Some("[DONE]"),
        "the stream ends with [DONE]: {events:?}"
    );
    events[..events.len() - 1]
        .iter()
        .map(|d| {
            serde_json::from_str(d).unwrap_or_else(|e| panic!("a chunk useChat would reject ({e}): {d}"))
        })
        .collect()
}

/// The finish reason and `messageMetadata` of the last `finish` chunk.
pub fn finish(chunks: &[UiChunk]) -> (Option<wasmhub::llm::FinishReason>, Value) {
    match chunks.iter().rev().find(|c| matches!(c, UiChunk::Finish { .. })) {
        Some(UiChunk::Finish {
            finish_reason,
            message_metadata,
        }) => (*finish_reason, message_metadata.clone().unwrap_or(Value::Null)),
        _ => panic!("no finish chunk in {:?}", types(chunks)),
    }
}

pub fn types(chunks: &[UiChunk]) -> Vec<String> {
    chunks.iter().map(|c| c.type_name().into_owned()).collect()
}

/// The stored session `id`.
pub async fn session(addr: SocketAddr, id: &str) -> Value {
    let resp = client::send(addr, http::Method::GET, &format!("/api/sessions/{id}"), None, &[]).await;
    assert_eq!(resp.status, 200, "GET /api/sessions/{id}");
    resp.json().await
}

/// The stored session `id` once no turn runs in it and its answer (the second
/// message) is stored.
pub async fn ended_session(addr: SocketAddr, id: &str) -> Value {
    crate::support::wait::until_seen(&format!("the turn of session {id} to end"), || async move {
        let s = session(addr, id).await;
        if s["active"] == false && s["messages"].as_array().map(Vec::len) == Some(2) {
            Ok(s)
        } else {
            Err(s)
        }
    })
    .await
}

/// The accounting records of chat session `id`, oldest first. The chat tests
/// share one store, so this reads every page and keeps the session's records.
pub async fn accounting_of(addr: SocketAddr, id: &str) -> Vec<Value> {
    let (mut records, mut since) = (Vec::new(), 0);
    loop {
        let path = format!("/api/accounting?since={since}&limit=1000");
        let resp = client::send(addr, http::Method::GET, &path, None, &[]).await;
        assert_eq!(resp.status, 200, "GET {path}");
        let page: Value = resp.json().await;
        let batch = page["records"].as_array().expect("records").clone();
        if batch.is_empty() {
            return records;
        }
        since = page["next"].as_u64().expect("next");
        records.extend(batch.into_iter().filter(|r| r["session"] == id));
    }
}

/// The arguments text of a `hub_call`.
pub fn call_args(calls: Value) -> String {
    json!({ "calls": calls }).to_string()
}
