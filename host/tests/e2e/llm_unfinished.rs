//! An upstream answer that stalls past its provider's `idle_timeout_ms`, and a hub
//! shutdown while answers are relayed, on every surface that relays or transforms
//! one: each ends as an error in its own protocol (the proxy: one OpenAI error
//! frame and no `[DONE]`; the UI streams: an `error` chunk; the Anthropic surface:
//! an `error` event and no `message_stop`), and the non-streamed forms answer 502
//! (503 `hub_shutting_down` for a request the shutdown found still waiting for its
//! response head).
//! (Cut and torn streams are in `llm_proxy`, other faults in `llm_failures`.)

use crate::support::chat::{submit, user};
use crate::support::client::{self, ClientResp};
use crate::support::hub::{self, Hub};
use crate::support::llm::{WITHIN, chat_body, error_text, finish_reason, ui_chunks};
use crate::support::upstream::{self, Frame, Reply, ReplyBody, Upstream};
use serde_json::{Value, json};
use std::net::SocketAddr;
use wasmhub::config::Config;
use wasmhub::llm::FinishReason;

/// Every surface that relays or transforms an upstream answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Surface {
    /// `/v1/chat/completions`, streamed.
    Proxy,
    /// `/v1/chat/completions`, not streamed.
    ProxyWhole,
    /// `/api/ui/chat/completions`.
    UiCompletions,
    /// `/api/chat` (the agent loop).
    Chat,
    /// `/v1/messages`, streamed.
    Messages,
    /// `/v1/messages`, not streamed (the upstream still streams).
    MessagesWhole,
    /// `/v1/chat/completions`, streamed, while the upstream holds its response
    /// head (only the shutdown ends that wait).
    ProxyHeadless,
}

const SURFACES: [Surface; 6] = [
    Surface::Proxy,
    Surface::ProxyWhole,
    Surface::UiCompletions,
    Surface::Chat,
    Surface::Messages,
    Surface::MessagesWhole,
];

impl Surface {
    /// Whether the answer is a stream (else one JSON body).
    fn streams(self) -> bool {
        !matches!(
            self,
            Surface::ProxyWhole | Surface::MessagesWhole | Surface::ProxyHeadless
        )
    }

    /// What the upstream answers: "Hel", then nothing (a JSON body that stops
    /// part way for the proxy's non-streamed request, which the hub relays as is).
    fn stalled_reply(self) -> Reply {
        if self == Surface::ProxyHeadless {
            let reply = Reply::sse(vec![Frame::Data(upstream::text_chunk("Hel"))]);
            return reply.delayed(std::time::Duration::from_secs(600));
        }
        if self == Surface::ProxyWhole {
            return Reply {
                body: ReplyBody::Sse(vec![
                    Frame::Raw(bytes::Bytes::from_static(
                        br#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hel"#,
                    )),
                    Frame::Hang,
                ]),
                ..Reply::bytes(200, "application/json", "")
            };
        }
        Reply::sse(vec![Frame::Data(upstream::text_chunk("Hel")), Frame::Hang])
    }

    async fn send(self, addr: SocketAddr, n: usize) -> ClientResp {
        let messages = |stream| {
            json!({"model": "up/gpt-test", "max_tokens": 64, "stream": stream,
                   "messages": [{"role": "user", "content": "hi"}]})
        };
        let anthropic = |body: Value| async move {
            let bytes = serde_json::to_vec(&body).unwrap().into();
            let headers = [("anthropic-version", "2023-06-01")];
            client::send(addr, http::Method::POST, "/v1/messages", Some(bytes), &headers).await
        };
        match self {
            Surface::Proxy | Surface::ProxyHeadless => {
                client::post(addr, "/v1/chat/completions", &chat_body(true)).await
            }
            Surface::ProxyWhole => client::post(addr, "/v1/chat/completions", &chat_body(false)).await,
            Surface::UiCompletions => client::post(addr, "/api/ui/chat/completions", &chat_body(true)).await,
            Surface::Chat => {
                let body = submit(&format!("unfinished-{n}"), vec![user("u1", "hi")]);
                client::post(addr, "/api/chat", &body).await
            }
            Surface::Messages => anthropic(messages(true)).await,
            Surface::MessagesWhole => anthropic(messages(false)).await,
        }
    }
}

/// How an answer ended: the error's `code` (the proxy's, which has one) and message.
#[derive(Debug)]
struct Failed {
    code: Option<String>,
    message: String,
}

/// Reads the rest of `resp` (after the events in `seen`) and checks it ended as an
/// error the surface's clients raise, never as a finished answer.
async fn failed(surface: Surface, resp: ClientResp, mut seen: Vec<String>) -> Failed {
    let status = resp.status;
    if !surface.streams() {
        let body = resp.json().await;
        // No response at all is a 503 (the hub's own state), a broken one a 502.
        let want = if surface == Surface::ProxyHeadless {
            503
        } else {
            502
        };
        assert_eq!(status, want, "{surface:?}: {body}");
        let message = body["error"]["message"].as_str().expect("a message").to_string();
        if surface == Surface::MessagesWhole {
            assert_eq!(
                (&body["type"], &body["error"]["type"]),
                (&json!("error"), &json!("api_error")),
                "{body}"
            );
            return Failed { code: None, message };
        }
        let code = body["error"]["code"].as_str().map(str::to_string);
        return Failed { code, message };
    }
    assert_eq!(status, 200, "{surface:?}");
    seen.extend(resp.events(WITHIN).await.0);
    match surface {
        Surface::Proxy => {
            assert!(!seen.iter().any(|e| e == "[DONE]"), "no [DONE]: {seen:?}");
            let last: Value = serde_json::from_str(seen.last().unwrap()).unwrap();
            assert_eq!(last["error"]["type"], "upstream_error", "{last}");
            let errors = seen.iter().filter(|e| e.contains("\"error\"")).count();
            assert_eq!(errors, 1, "one error frame: {seen:?}");
            Failed {
                code: last["error"]["code"].as_str().map(str::to_string),
                message: last["error"]["message"].as_str().unwrap().to_string(),
            }
        }
        Surface::UiCompletions | Surface::Chat => {
            let chunks = ui_chunks(&seen);
            assert_eq!(finish_reason(&chunks), Some(FinishReason::Error), "{chunks:?}");
            let message = error_text(&chunks).expect("an error chunk").to_string();
            Failed { code: None, message }
        }
        Surface::Messages => {
            let events: Vec<Value> = seen.iter().map(|e| serde_json::from_str(e).unwrap()).collect();
            let last = events.last().unwrap();
            assert_eq!(last["type"], "error", "{events:?}");
            assert!(
                !events.iter().any(|e| e["type"] == "message_stop"),
                "no message_stop: {events:?}"
            );
            Failed {
                code: None,
                message: last["error"]["message"].as_str().unwrap().to_string(),
            }
        }
        Surface::ProxyWhole | Surface::MessagesWhole | Surface::ProxyHeadless => {
            unreachable!("not streamed")
        }
    }
}

/// Reads events until the first that carries the upstream's "Hel".
async fn until_hel(surface: Surface, resp: &mut ClientResp) -> Vec<String> {
    let mut seen = Vec::new();
    while let Some(event) = resp.next_event().await {
        let hel = event.contains("Hel");
        seen.push(event);
        if hel {
            return seen;
        }
    }
    panic!("{surface:?}: the stream ended before Hel: {seen:?}");
}

/// A hub whose provider `up` (also the agent's model) has `extra` settings.
async fn setup(extra: &str) -> (Upstream, Hub) {
    let up = Upstream::start().await;
    let mut config = Config {
        providers: vec![hub::provider("up", &up.base_url(), &["gpt-*"], extra)],
        ..Config::default()
    };
    config.agent.model = Some("up/gpt-test".into());
    let hub = hub::start_with(config).await;
    (up, hub)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_upstream_is_an_error_on_every_surface() {
    let (up, hub) = setup("idle_timeout_ms = 300\nkeepalive_ms = 100\nmax_retries = 0").await;
    for (n, surface) in SURFACES.into_iter().enumerate() {
        up.push(surface.stalled_reply());
        let failure = failed(surface, surface.send(hub.addr, n).await, Vec::new()).await;
        assert!(
            failure.message.contains("the upstream sent nothing for 300 ms"),
            "{surface:?}: {failure:?}"
        );
        if matches!(surface, Surface::Proxy | Surface::ProxyWhole) {
            assert_eq!(failure.code.as_deref(), Some("upstream_broken"), "{surface:?}");
        }
        assert!(
            up.wait_cancelled(n + 1, WITHIN).await,
            "{surface:?}: the stalled upstream request is closed"
        );
    }
    // The session of the turn that stalled keeps the error.
    let session = crate::support::chat::session(hub.addr, "unfinished-3").await;
    assert!(
        session.to_string().contains("sent nothing for 300 ms"),
        "{session}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_shutdown_mid_stream_ends_every_surface_with_an_error() {
    // Long timeouts: only the shutdown ends these answers.
    let (up, mut hub) =
        setup("idle_timeout_ms = 600000\nfirst_byte_timeout_ms = 600000\nmax_retries = 0").await;
    let mut answers = Vec::new();
    let surfaces = SURFACES.into_iter().chain([Surface::ProxyHeadless]);
    for (n, surface) in surfaces.enumerate() {
        up.push(surface.stalled_reply());
        let (started_tx, started) = tokio::sync::oneshot::channel();
        let addr = hub.addr;
        answers.push(tokio::spawn(async move {
            let mut resp = surface.send(addr, n).await;
            let seen = match surface.streams() {
                true => until_hel(surface, &mut resp).await,
                false => Vec::new(),
            };
            let _ = started_tx.send(());
            (surface, failed(surface, resp, seen).await)
        }));
        // One at a time, so each request takes the reply pushed for it; a stream
        // is under way once its first event arrived, a whole answer once the
        // upstream has its request (its response head is held until the end).
        if surface.streams() {
            started.await.expect("the stream started");
        }
        let up = &up;
        crate::support::wait::until("the upstream to get the request", || async move {
            (up.requests().len() > n).then_some(())
        })
        .await;
    }
    hub.shut_down();
    for answer in answers {
        let (surface, failure) = answer.await.expect("the answer's task");
        assert!(
            failure.message.contains("the hub is shutting down"),
            "{surface:?}: {failure:?}"
        );
        if matches!(
            surface,
            Surface::Proxy | Surface::ProxyWhole | Surface::ProxyHeadless
        ) {
            assert_eq!(failure.code.as_deref(), Some("hub_shutting_down"), "{surface:?}");
        }
    }
}
