//! Accounting (`hub::accounting`) end to end: an agent turn with tool calls
//! against a scripted upstream leaves one record per model step (tokens from the
//! upstream's usage chunk, cost from `[accounting.prices]`) and one per operation
//! call (call-graph id, bytes, outcome), summed on the session, readable from
//! `GET /api/accounting?since=…` and appended to the JSONL file; a proxied call is
//! accounted too.

use crate::support::chat::{self, MODEL, call_args, chunks, post_chat, submit, text_step, tool_step, user};
use crate::support::client;
use crate::support::hub;
use crate::support::runtime::Scratch;
use crate::support::upstream::{self, Frame, Reply, ReplyBody, Upstream};
use crate::support::wait;
use http::Method;
use serde_json::{Value, json};
use wasmhub::config::{Config, ModelPrice};

/// A usage chunk with cached and reasoning tokens, as OpenAI sends it last.
fn usage_frame(input: u64, cached: u64, output: u64, reasoning: u64) -> Frame {
    Frame::Data(
        json!({"id": "c", "object": "chat.completion.chunk", "model": "m1", "choices": [],
            "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output,
                "prompt_tokens_details": {"cached_tokens": cached},
                "completion_tokens_details": {"reasoning_tokens": reasoning}}})
        .to_string(),
    )
}

/// `reply` with its usage chunk (the one before `[DONE]`) replaced by `usage`.
fn with_usage(mut reply: Reply, usage: Frame) -> Reply {
    let ReplyBody::Sse(frames) = &mut reply.body else {
        panic!("an SSE reply")
    };
    let at = frames.len() - 2;
    frames[at] = usage;
    reply
}

async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, Value) {
    let resp = client::send(addr, Method::GET, path, None, &[]).await;
    (resp.status.as_u16(), resp.json().await)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[tokio::test]
async fn an_agent_turn_with_tools_is_accounted_per_step_and_call_and_summed_on_its_session() {
    let up = Upstream::start().await;
    let data = Scratch::new("accounting");
    let jsonl = data.path("usage/records.jsonl");
    let mut config = Config {
        providers: vec![hub::provider(
            "scripted",
            &up.base_url(),
            &["m*"],
            "max_retries = 0",
        )],
        plugins_dir: chat::plugins(&[]),
        data_dir: data.path("store"),
        ..Config::default()
    };
    config.agent.model = Some(MODEL.into());
    config.accounting.jsonl = Some(jsonl.clone());
    let price = ModelPrice {
        input: 2.0,
        output: 10.0,
        cached_input: Some(0.5),
    };
    config.accounting.prices.insert(MODEL.into(), price);
    let hub = hub::start_with(config).await;
    let (status, page) = get(hub.addr, "/api/accounting").await;
    assert_eq!((status, &page["records"]), (200, &json!([])), "{page}");

    up.push(with_usage(
        tool_step(
            Some("Computing."),
            &[(
                "call_c",
                "hub_call",
                call_args(json!([
                    {"tool": "calc.eval", "input": {"expression": "1/3 + 1/6"}},
                    {"tool": "text.nope", "input": {}}
                ])),
            )],
        ),
        usage_frame(120, 100, 30, 12),
    ));
    up.push(text_step("It is 1/2."));
    let session = "acct-1";
    let turn = chunks(post_chat(hub.addr, &submit(session, vec![user("u1", "1/3 + 1/6?")])).await).await;
    assert!(
        chat::types(&turn).contains(&"finish".to_string()),
        "{:?}",
        chat::types(&turn)
    );

    let (status, page) = get(hub.addr, "/api/accounting?since=0&limit=100").await;
    assert_eq!(status, 200, "{page}");
    let records = page["records"].as_array().unwrap().clone();
    assert_eq!(records.len(), 4, "two steps, two calls: {page}");
    assert!(
        records
            .iter()
            .all(|r| r["session"] == session && r["caller"] == "local"),
        "{page}"
    );
    let ids: Vec<u64> = records.iter().map(|r| r["id"].as_u64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert_eq!(page["next"], json!(ids[3]));

    let steps: Vec<&Value> = records.iter().filter(|r| r["kind"] == "model_step").collect();
    assert_eq!(steps.len(), 2, "{page}");
    let first = steps[0];
    assert_eq!(
        (&first["step"], &first["provider"], &first["model"]),
        (&json!(0), &json!("scripted"), &json!("m1"))
    );
    assert_eq!(
        (
            &first["input_tokens"],
            &first["cached_input_tokens"],
            &first["output_tokens"],
            &first["reasoning_tokens"]
        ),
        (&json!(120), &json!(100), &json!(30), &json!(12))
    );
    // 20 fresh input tokens at 2, 100 cached at 0.5, 30 output at 10, per million.
    assert!(close(first["cost"].as_f64().unwrap(), 390e-6), "{first}");
    assert!(first["latency_ms"].is_u64() && first["message"].is_string());
    assert_eq!(
        (&steps[1]["step"], &steps[1]["input_tokens"]),
        (&json!(1), &json!(100))
    );
    assert!(close(steps[1]["cost"].as_f64().unwrap(), 300e-6), "{}", steps[1]);

    let calls: Vec<&Value> = records.iter().filter(|r| r["kind"] == "tool_call").collect();
    let eval = calls
        .iter()
        .find(|r| r["tool"] == "calc.eval")
        .expect("the calc.eval call");
    assert_eq!(eval["outcome"], "ok");
    assert!(
        eval["input_bytes"].as_u64().unwrap() > 10 && eval["output_bytes"].as_u64().unwrap() > 0,
        "{eval}"
    );
    assert!(eval["latency_us"].is_u64() && eval.get("parent").is_none());
    let nope = calls
        .iter()
        .find(|r| r["tool"] == "text.nope")
        .expect("the text.nope call");
    assert_eq!(
        (&nope["outcome"], &nope["input_bytes"]),
        (&json!("not_found"), &json!(0))
    );
    // The call-graph ids are the audit log's.
    let (_, audit) = get(hub.addr, "/api/calls").await;
    let audited: Vec<&Value> = audit["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["id"])
        .collect();
    assert!(calls.iter().all(|c| audited.contains(&&c["call_id"])), "{audit}");

    // The session's sums, in its JSON and in the listing.
    let stored = chat::session(hub.addr, session).await;
    let usage = &stored["usage"];
    assert_eq!(
        (
            &usage["modelSteps"],
            &usage["toolCalls"],
            &usage["inputTokens"],
            &usage["outputTokens"]
        ),
        (&json!(2), &json!(2), &json!(220), &json!(40)),
        "{usage}"
    );
    assert_eq!(
        (&usage["cachedInputTokens"], &usage["reasoningTokens"]),
        (&json!(100), &json!(12))
    );
    assert!(close(usage["cost"].as_f64().unwrap(), 690e-6), "{usage}");
    let (_, list) = get(hub.addr, "/api/sessions").await;
    let listed = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == session)
        .unwrap();
    assert_eq!(&listed["usage"], usage);

    // Paging by id, and from a time.
    let (_, one) = get(hub.addr, &format!("/api/accounting?since={}&limit=1", ids[1])).await;
    assert_eq!(
        (&one["records"][0]["id"], &one["next"]),
        (&json!(ids[2]), &json!(ids[2]))
    );
    let from = records[2]["time_ms"].as_u64().unwrap();
    let (_, later) = get(hub.addr, &format!("/api/accounting?since={}", rfc3339(from))).await;
    let expected: Vec<&Value> = records
        .iter()
        .filter(|r| r["time_ms"].as_u64().unwrap() >= from)
        .collect();
    assert!(expected.contains(&&records[2]));
    assert_eq!(
        later["records"].as_array().unwrap().iter().collect::<Vec<_>>(),
        expected,
        "{later}"
    );
    let (status, bad) = get(hub.addr, "/api/accounting?since=last-tuesday").await;
    assert_eq!((status, &bad["error"]["code"]), (400, &json!("invalid_input")));

    // A proxied call is a model step without a session.
    up.push(Reply::sse(vec![
        Frame::Data(upstream::text_chunk("hi")),
        Frame::Data(upstream::finish_chunk("stop")),
        usage_frame(7, 0, 3, 0),
        Frame::Data("[DONE]".into()),
    ]));
    let body = json!({"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": true});
    let (events, _) = client::post(hub.addr, upstream::CHAT, &body)
        .await
        .events(crate::support::llm::WITHIN)
        .await;
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    let (_, proxied) = get(hub.addr, &format!("/api/accounting?since={}", ids[3])).await;
    let proxied = &proxied["records"][0];
    assert_eq!(
        (
            &proxied["kind"],
            &proxied["input_tokens"],
            &proxied["output_tokens"],
            proxied.get("session")
        ),
        (&json!("model_step"), &json!(7), &json!(3), None),
        "{proxied}"
    );

    // The JSONL file holds every record, one per line, in order.
    let (_, all) = get(hub.addr, "/api/accounting").await;
    let lines: Vec<Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(Value::Array(lines), all["records"]);
}

/// `ms` as RFC 3339 UTC with milliseconds (Hinnant's `civil_from_days`).
fn rfc3339(ms: u64) -> String {
    let (secs, millis) = (ms / 1000, ms % 1000);
    let z = secs / 86_400 + 719_468;
    let (era, doe) = (z / 146_097, z % 146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = era * 400 + yoe + u64::from(month <= 2);
    let t = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        t / 3600,
        t / 60 % 60,
        t % 60
    )
}

/// The base64 of one byte (`.tiktoken` files name tokens in base64).
fn base64_byte(b: u8) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let (hi, lo) = (ALPHABET[usize::from(b >> 2)], ALPHABET[usize::from((b & 3) << 4)]);
    format!("{}{}==", hi as char, lo as char)
}

#[tokio::test]
async fn a_call_without_usage_is_counted_by_the_targets_tokenizer_and_says_which() {
    let up = Upstream::start().await;
    let data = Scratch::new("accounting-tokenizer");
    // Ranks of the 256 single bytes and nothing else: one token per byte, so the
    // counts below are byte counts, distinct from the 4-bytes estimate.
    let ranks = data.path("bytes.tiktoken");
    let text: String = (0..=255u8).map(|b| format!("{} {b}\n", base64_byte(b))).collect();
    std::fs::write(&ranks, text).unwrap();
    let tokenizer = format!("max_retries = 0\ntokenizer = \"file:{}\"", ranks.display());
    let mut config = Config {
        providers: vec![
            hub::provider("counted", &up.base_url(), &["m1"], &tokenizer),
            hub::provider("guessed", &up.base_url(), &["m2"], "max_retries = 0"),
        ],
        plugins_dir: chat::plugins(&[]),
        data_dir: data.path("store"),
        ..Config::default()
    };
    config.agent.model = Some("counted/m1".into());
    let hub = hub::start_with(config).await;
    let messages = json!([{"role": "user", "content": "count these words, please"}]);
    let input_bytes = messages.to_string().len() as u64;

    // Streamed, no usage chunk: counted by the provider's tokenizer.
    up.push(Reply::sse(vec![
        Frame::Data(upstream::text_chunk("Hello there")),
        Frame::Data(upstream::finish_chunk("stop")),
        Frame::Data("[DONE]".into()),
    ]));
    let body = json!({"model": "counted/m1", "messages": messages, "stream": true});
    let (events, _) = client::post(hub.addr, upstream::CHAT, &body)
        .await
        .events(crate::support::llm::WITHIN)
        .await;
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));

    // Not streamed, no usage: this provider has no tokenizer, so the estimate counts.
    let answer = json!({"id": "c", "object": "chat.completion", "model": "m2",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "Fine, thanks."}}]});
    up.push(Reply::json(200, answer));
    let body = json!({"model": "guessed/m2", "messages": messages});
    let resp = client::post(hub.addr, upstream::CHAT, &body).await;
    assert_eq!(resp.status.as_u16(), 200);

    // With usage reported, the record has no `tokenizer`: the provider counted.
    up.push(Reply::sse(vec![
        Frame::Data(upstream::text_chunk("hi")),
        Frame::Data(upstream::finish_chunk("stop")),
        usage_frame(7, 0, 3, 0),
        Frame::Data("[DONE]".into()),
    ]));
    let body = json!({"model": "counted/m1", "messages": messages, "stream": true});
    client::post(hub.addr, upstream::CHAT, &body)
        .await
        .events(crate::support::llm::WITHIN)
        .await;

    // An agent turn's step without usage: counted the same way, on its session.
    up.push(Reply::sse(vec![
        Frame::Data(upstream::text_chunk("Agent here")),
        Frame::Data(upstream::finish_chunk("stop")),
        Frame::Data("[DONE]".into()),
    ]));
    let turn = chunks(post_chat(hub.addr, &submit("tok-1", vec![user("u1", "hi")])).await).await;
    assert!(
        chat::types(&turn).contains(&"finish".to_string()),
        "{:?}",
        chat::types(&turn)
    );

    // A stream's record is written after its last event reached the client.
    let page = wait::until("the four model steps accounted", || async {
        let (_, page) = get(hub.addr, "/api/accounting").await;
        let steps = page["records"]
            .as_array()?
            .iter()
            .filter(|r| r["kind"] == "model_step")
            .count();
        (steps == 4).then_some(page)
    })
    .await;
    let agent_step = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "model_step" && r["session"] == "tok-1")
        .unwrap();
    assert_eq!(
        (&agent_step["output_tokens"], &agent_step["tokenizer"]),
        (
            &json!("Agent here".len()),
            &json!(format!("file:{}", ranks.display()))
        ),
        "{agent_step}"
    );
    // The agent's request (system prompt, tools, the user's message) is far longer
    // than the user's text, and each of its bytes is a token.
    assert!(
        agent_step["input_tokens"].as_u64().unwrap() > input_bytes,
        "{agent_step}"
    );

    // In any order: a stream's record may land after the next call's.
    let mut steps: Vec<(Value, Value, Value, Value)> = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "model_step" && r.get("session").is_none())
        .map(|r| {
            let tokenizer = r.get("tokenizer").cloned().unwrap_or(Value::Null);
            (
                r["provider"].clone(),
                r["input_tokens"].clone(),
                r["output_tokens"].clone(),
                tokenizer,
            )
        })
        .collect();
    steps.sort_by_key(|s| format!("{s:?}"));
    let mut expected = vec![
        (
            json!("counted"),
            json!(input_bytes),
            json!("Hello there".len()),
            json!(format!("file:{}", ranks.display())),
        ),
        (
            json!("guessed"),
            json!(input_bytes.div_ceil(4)),
            json!("Fine, thanks.".len().div_ceil(4)),
            json!("estimate"),
        ),
        (json!("counted"), json!(7), json!(3), Value::Null),
    ];
    expected.sort_by_key(|s| format!("{s:?}"));
    assert_eq!(steps, expected, "{page}");
}
