//! The legacy HTTP+SSE transport (MCP 2024-11-05), the fallback for old servers:
//! when a POST of `initialize` to the configured URL is refused with 400, 404 or
//! 405, the hub GETs that URL as an event stream, waits for its `endpoint` event
//! (a path on the same server, within the exchange time), and from then on POSTs
//! every message there (202) and reads every answer from the stream (`message`
//! events, each within `max_message_kb`). The stream ending closes the connection.

use super::connection::Connection;
use super::error::RequestError;
use super::http::{Failure, HttpOut, Negotiated, payload, send};
use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::oneshot;

/// Whether a refused `initialize` POST means "try the legacy transport".
pub(super) fn refused(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED
    )
}

/// Opens the server's event stream, learns its POST endpoint, and posts `body`
/// (the `initialize` request) there.
pub(super) async fn fall_back(out: &HttpOut, conn: &Weak<Connection>, body: Bytes) -> Result<(), Failure> {
    let old = |why: String| Failure::Gone(format!("neither Streamable HTTP nor HTTP+SSE: {why}"));
    let response = send(out, Method::GET, &out.endpoint.target, None).await?;
    let is_sse = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if response.status() != StatusCode::OK || !is_sse {
        return Err(old(format!(
            "the POST was refused and a GET answered HTTP {}",
            response.status()
        )));
    }
    let (found, endpoint) = oneshot::channel();
    let Some(live) = conn.upgrade() else {
        return Ok(());
    };
    let ended = live.ended();
    drop(live);
    let stream = Stream {
        conn: conn.clone(),
        max_message: out.endpoint.max_message,
        max_kb: out.endpoint.max_kb,
        found: Mutex::new(Some(found)),
    };
    tokio::spawn(stream.read(response, ended));
    let target = match tokio::time::timeout(out.endpoint.exchange_time, endpoint).await {
        Ok(Ok(target)) => target,
        _ => return Err(old("the event stream named no endpoint".into())),
    };
    let target = same_server(&target, &out.endpoint.target).ok_or_else(|| {
        old(format!(
            "the endpoint {target:?} is not a path on the same server"
        ))
    })?;
    crate::info!(
        "mcp server {}: speaks the legacy HTTP+SSE transport; posting to its endpoint",
        out.endpoint.server
    );
    set_target(&out.negotiated, target.clone());
    post(out, &target, body).await
}

fn set_target(negotiated: &Arc<Mutex<Negotiated>>, target: String) {
    negotiated.lock().unwrap_or_else(|e| e.into_inner()).legacy_target = Some(target);
}

/// The path and query to post to: `endpoint` when it is an absolute path, or a
/// path relative to the stream's URL; an absolute URL (another origin, perhaps)
/// is refused.
fn same_server(endpoint: &str, configured: &str) -> Option<String> {
    let endpoint = endpoint.trim();
    if endpoint.starts_with('/') {
        return Some(endpoint.to_string());
    }
    if endpoint.contains("://") {
        return None;
    }
    // Relative to the stream's URL.
    let base = configured.split('?').next().unwrap_or(configured);
    let dir = base.rsplit_once('/').map_or("", |(dir, _)| dir);
    Some(format!("{dir}/{endpoint}"))
}

/// POSTs one message to the legacy endpoint; its answer comes on the stream.
pub(super) async fn post(out: &HttpOut, target: &str, body: Bytes) -> Result<(), Failure> {
    let response = send(out, Method::POST, target, Some(body)).await?;
    let status = response.status();
    // The body ("Accepted") carries nothing; read it so the exchange ends cleanly.
    let _ = response.into_body().collect().await;
    if status.is_success() {
        Ok(())
    } else {
        Err(Failure::Request(RequestError::Http(format!(
            "the server answered HTTP {status}"
        ))))
    }
}

/// The server's event stream.
struct Stream {
    conn: Weak<Connection>,
    max_message: usize,
    max_kb: u64,
    found: Mutex<Option<oneshot::Sender<String>>>,
}

impl Stream {
    async fn read(self, response: super::http::Response, mut ended: tokio::sync::watch::Receiver<bool>) {
        let events = async {
            let mut body = response.into_body();
            let mut parser = crate::sse::Parser::new(self.max_message);
            let mut events = Vec::new();
            while let Some(frame) = body.frame().await {
                let Ok(frame) = frame else {
                    return "reading its event stream failed".to_string();
                };
                let Ok(data) = frame.into_data() else { continue };
                if parser
                    .feed(&data, &mut |e| {
                        events.push((e.event.to_string(), e.data.to_string()))
                    })
                    .is_err()
                {
                    return format!(
                        "it sent an event larger than max_message_kb ({} KiB)",
                        self.max_kb
                    );
                }
                for (event, data) in events.drain(..) {
                    if let Err(e) = self.on_event(&event, &data) {
                        return e.to_string();
                    }
                }
            }
            "its event stream ended".to_string()
        };
        let stopped = async move {
            let _ = ended.wait_for(|e| *e).await;
        };
        if let crate::race::Race::First(how) = crate::race::race(events, stopped).await
            && let Some(conn) = self.conn.upgrade()
        {
            conn.close(how);
        }
    }

    fn on_event(&self, event: &str, data: &str) -> Result<(), RequestError> {
        if event == "endpoint" {
            if let Some(found) = self.found.lock().unwrap_or_else(|e| e.into_inner()).take() {
                let _ = found.send(data.to_string());
            }
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let conn = self.conn.clone();
        payload(data.as_bytes(), &mut |m| {
            if let Some(conn) = conn.upgrade() {
                conn.deliver(m);
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_stay_on_the_configured_server() {
        assert_eq!(
            same_server("/messages?sessionId=1", "/sse").as_deref(),
            Some("/messages?sessionId=1")
        );
        assert_eq!(
            same_server("messages?s=1", "/mcp/sse?k=v").as_deref(),
            Some("/mcp/messages?s=1")
        );
        assert_eq!(same_server("https://evil.example/steal", "/sse"), None);
        assert!(refused(StatusCode::METHOD_NOT_ALLOWED) && !refused(StatusCode::UNAUTHORIZED));
    }
}
