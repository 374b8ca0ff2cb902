//! Writing a turn to a client as a UI message stream: the chunks so far, then the
//! live ones, `: keepalive` comments while the turn is quiet, and `data: [DONE]` at
//! the end. Frames go through the shared SSE encoder (`llm::SseSink`).
//!
//! The writer holds the client's [`Watch`]: when the client disconnects the
//! body channel closes, the writer returns and drops it, and if it was the last
//! watcher (on any replica) the turn is cancelled.

use crate::agent::Watch;
use crate::llm::stream::{SseSink, UiSink, keepalive_while};
use crate::surfaces::body::Body;
use crate::surfaces::chat_metrics::ChatStream;
use crate::surfaces::respond::Resp;
use std::time::Duration;

/// Frames buffered towards one client before the writer waits.
const STREAM_FRAMES: usize = 16;

/// The streaming response for `sub`, counted in the chat metrics as `stream`.
pub(crate) fn respond(mut sub: Watch, keepalive: Duration, mut stream: ChatStream) -> Resp {
    let (tx, body) = Body::channel(STREAM_FRAMES);
    tokio::spawn(async move {
        // A resume's span (in the turn's trace) lasts as long as its stream.
        let _span = stream.span();
        let mut sink = SseSink::new(tx);
        loop {
            match keepalive_while(&mut sink, keepalive, sub.next_batch()).await {
                Err(_closed) => return stream.ended(true),
                Ok(None) => {
                    let left = sink.done().await.is_err();
                    return stream.ended(left);
                }
                Ok(Some(batch)) => {
                    stream.saw(&batch);
                    if sink.send(&batch).await.is_err() {
                        return stream.ended(true);
                    }
                }
            }
        }
    });
    crate::surfaces::respond::sse(body, true)
}
