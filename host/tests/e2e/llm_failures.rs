//! The OpenAI proxy when things go wrong upstream or with the client: retries of
//! 429/5xx and connect failures, error frames, dropped connections and malformed
//! lines mid-stream, oversized events, keepalives and timeouts, and a client that
//! leaves.

use crate::support::client;
use crate::support::hub;
use crate::support::llm::*;
use crate::support::upstream::{self, Frame, Reply, Upstream};
use serde_json::Value;
use std::time::{Duration, Instant};
use wasmhub::llm::FinishReason;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_is_retried_after_its_retry_after_and_5xx_until_the_retries_run_out() {
    let (up, hub) = setup("max_retries = 2\nretry_base_ms = 20").await;
    up.push(Reply::error(429, "slow down").header("retry-after", "1"));
    up.push(Reply::sse(upstream::fixture_frames("groq--groq-tool-call")));
    let started = Instant::now();
    let resp = client::post(hub.addr, "/api/ui/chat/completions", &chat_body(true)).await;
    let (events, _) = resp.events(WITHIN).await;
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 was honoured ({:?})",
        started.elapsed()
    );
    assert_eq!(finish_reason(&ui_chunks(&events)), Some(FinishReason::ToolCalls));
    assert_eq!(up.requests().len(), 2);

    for _ in 0..3 {
        up.push(Reply::error(503, "overloaded"));
    }
    let resp = client::post(hub.addr, "/v1/chat/completions", &chat_body(true)).await;
    assert_eq!(
        resp.status, 503,
        "the last answer is relayed once the retries are spent"
    );
    assert_eq!(resp.json().await["error"]["message"], "overloaded");
    assert_eq!(up.requests().len(), 5, "one try and two retries");
}

#[tokio::test]
async fn connect_failures_are_retried_then_reported_as_bad_gateway() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead = format!("http://127.0.0.1:{port}/v1");
    let hub = hub::start(vec![hub::provider(
        "up",
        &dead,
        &["*"],
        "max_retries = 2\nretry_base_ms = 100",
    )])
    .await;
    let started = Instant::now();
    let resp = client::post(hub.addr, "/v1/chat/completions", &chat_body(false)).await;
    assert_eq!(resp.status, 502);
    assert!(
        started.elapsed() >= Duration::from_millis(100),
        "two backoffs of >= 50 ms and >= 100 ms happened"
    );
    let message = resp.json().await["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("cannot connect") && message.contains("after 3 attempts"),
        "{message}"
    );
}

#[tokio::test]
async fn an_error_frame_mid_stream_ends_the_ui_stream_with_error_then_finish_and_is_not_retried() {
    let (up, hub) = setup("max_retries = 3").await;
    up.push(Reply::sse(vec![
        Frame::Data(upstream::text_chunk("Hel")),
        Frame::Data(upstream::text_chunk("lo")),
        Frame::Data(r#"{"error":{"message":"The server had an error processing your request","type":"server_error","param":null,"code":500}}"#.into()),
    ]));
    let events = streamed(&hub, "/api/ui/chat/completions").await;
    let chunks = ui_chunks(&events);
    let types: Vec<String> = chunks.iter().map(|c| c.type_name().into_owned()).collect();
    assert_eq!(
        types,
        [
            "start",
            "start-step",
            "text-start",
            "text-delta",
            "text-delta",
            "error",
            "text-end",
            "finish-step",
            "finish"
        ]
    );
    assert_eq!(
        error_text(&chunks),
        Some("The server had an error processing your request")
    );
    assert_eq!(finish_reason(&chunks), Some(FinishReason::Error));
    assert_eq!(up.requests().len(), 1);
}

#[tokio::test]
async fn a_dropped_connection_or_a_malformed_line_mid_stream_is_reported_in_both_protocols() {
    let (up, hub) = setup("max_retries = 3").await;
    let dropped = || {
        Reply::sse(vec![
            Frame::Data(upstream::text_chunk("partial")),
            Frame::Delay(Duration::from_millis(50)),
            Frame::Drop,
        ])
    };

    up.push(dropped());
    let events = streamed(&hub, "/api/ui/chat/completions").await;
    let chunks = ui_chunks(&events);
    assert!(
        error_text(&chunks).unwrap().contains("failed mid-response"),
        "{:?}",
        error_text(&chunks)
    );
    assert_eq!(text_of(&chunks).0, "partial");

    up.push(dropped());
    let events = streamed(&hub, "/v1/chat/completions").await;
    assert_eq!(events[0], upstream::text_chunk("partial"));
    let last: Value = serde_json::from_str(events.last().unwrap()).unwrap();
    assert_eq!(
        last["error"]["type"], "upstream_error",
        "an OpenAI error frame tells SDK clients: {last}"
    );
    assert_eq!(
        up.requests().len(),
        2,
        "nothing is retried once bytes were streamed"
    );

    up.push(Reply::sse(vec![
        Frame::Data(upstream::text_chunk("ok")),
        Frame::Data("{\"choices\": [{\"delta\": ".into()),
    ]));
    let events = streamed(&hub, "/api/ui/chat/completions").await;
    let chunks = ui_chunks(&events);
    assert!(
        error_text(&chunks).unwrap().contains("not valid JSON"),
        "{:?}",
        error_text(&chunks)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ten_megabyte_chunk_passes_whole_and_an_event_over_the_cap_is_a_clean_error() {
    let (up, hub) = setup("").await;
    let big: String = "0123456789abcdef".repeat(10 * 1024 * 1024 / 16);
    let chunk = upstream::text_chunk(&big);
    let frames = vec![
        Frame::Data(chunk.clone()),
        Frame::Data(upstream::finish_chunk("stop")),
        Frame::Data("[DONE]".into()),
    ];

    up.push(Reply::sse(frames.clone()));
    let events = streamed(&hub, "/v1/chat/completions").await;
    assert_eq!(events.len(), 3);
    assert!(events[0] == chunk, "the 10 MB event arrives intact");

    up.push(Reply::sse(frames.clone()));
    let events = streamed(&hub, "/api/ui/chat/completions").await;
    let chunks = ui_chunks(&events);
    assert!(text_of(&chunks).0 == big);
    assert_eq!(finish_reason(&chunks), Some(FinishReason::Stop));

    let capped_up = Upstream::start().await;
    let capped = hub::start(vec![hub::provider(
        "up",
        &capped_up.base_url(),
        &["*"],
        "max_event_kb = 1024",
    )])
    .await;
    capped_up.push(Reply::sse(frames));
    let (events, _) = client::post(capped.addr, "/api/ui/chat/completions", &chat_body(true))
        .await
        .events(WITHIN)
        .await;
    let chunks = ui_chunks(&events);
    assert!(
        error_text(&chunks)
            .unwrap()
            .contains("larger than the 1048576-byte limit"),
        "{:?}",
        error_text(&chunks)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_cancels_the_upstream_request_at_once() {
    let (up, hub) = setup("").await;
    for path in ["/v1/chat/completions", "/api/ui/chat/completions"] {
        let before = up.cancelled();
        up.push(Reply::sse(vec![
            Frame::Data(upstream::text_chunk("first")),
            Frame::Hang,
        ]));
        let mut resp = client::post(hub.addr, path, &chat_body(true)).await;
        // Wait until the stream is really flowing, then hang up.
        loop {
            let data = resp.next_event().await.expect("an event before the hang");
            if data.contains("first") {
                break;
            }
        }
        drop(resp);
        assert!(
            up.wait_cancelled(before + 1, Duration::from_secs(10)).await,
            "{path}: the upstream saw the cancel"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_streams_get_keepalives_and_a_silent_upstream_hits_the_idle_timeout() {
    let (up, hub) = setup("keepalive_ms = 100\nidle_timeout_ms = 2000").await;
    up.push(Reply::sse(vec![
        Frame::Raw(": PROCESSING\r\n\r\n".into()),
        Frame::Data(upstream::text_chunk("a")),
        Frame::Delay(Duration::from_millis(450)),
        Frame::Data(upstream::text_chunk("b")),
        Frame::Data(upstream::finish_chunk("stop")),
    ]));
    let (events, raw) = client::post(hub.addr, "/api/ui/chat/completions", &chat_body(true))
        .await
        .events(WITHIN)
        .await;
    let chunks = ui_chunks(&events);
    assert_eq!(
        (text_of(&chunks).0.as_str(), finish_reason(&chunks)),
        ("ab", Some(FinishReason::Stop)),
        "no [DONE] upstream is fine"
    );
    let raw = String::from_utf8(raw).unwrap();
    assert!(raw.matches(": keepalive\n\n").count() >= 2, "{raw}");
    assert!(!raw.contains("PROCESSING"), "upstream comments are not relayed");

    let (up, hub) = setup("keepalive_ms = 100\nidle_timeout_ms = 300").await;
    up.push(Reply::sse(vec![
        Frame::Data(upstream::text_chunk("a")),
        Frame::Hang,
    ]));
    let started = Instant::now();
    let events = streamed(&hub, "/api/ui/chat/completions").await;
    let chunks = ui_chunks(&events);
    assert!(
        error_text(&chunks).unwrap().contains("sent nothing for 300 ms"),
        "{:?}",
        error_text(&chunks)
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        up.wait_cancelled(1, Duration::from_secs(10)).await,
        "the timed-out upstream request is closed"
    );
}

#[tokio::test]
async fn a_slow_first_byte_times_out_as_gateway_timeout() {
    let (up, hub) = setup("first_byte_timeout_ms = 200\nmax_retries = 0").await;
    up.push(
        Reply::sse(upstream::fixture_frames("mistral--mistral-tool-call"))
            .delayed(Duration::from_millis(1500)),
    );
    let resp = client::post(hub.addr, "/v1/chat/completions", &chat_body(true)).await;
    assert_eq!(resp.status, 504);
    assert!(
        resp.json().await["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no response within 200 ms")
    );
}
