//! A one-off turn of the agent loop for the stateless APIs (Chat Completions,
//! Messages, `POST /v1/agents/{name}`): the client sends the whole conversation,
//! the turn runs in a session of its own, stops when its client leaves (these
//! APIs cannot resume), and the session is deleted when it ends, also when the
//! request's future is dropped mid-turn (`agent::TemporarySession`).
//!
//! Each API answers through its own [`AnswerSink`]: collecting one answer for a
//! non-streamed request, or writing its own event stream.

use super::super::App;
use crate::agent::{AgentError, ChatRequest, Subscription, TemporarySession};
use crate::hub::Caller;
use crate::llm::stream::keepalive_while;
use crate::llm::{Closed, UiSink};
use std::future::Future;
use std::sync::Arc;

/// Where an API's answer to a turn goes.
pub(crate) trait AnswerSink: UiSink + 'static {
    /// Sends what opens the answer (before the first chunk).
    fn begin(&mut self) -> impl Future<Output = Result<(), Closed>> + Send;
    /// Whether the answer is complete (an error ended it early, or the turn's
    /// `finish` was sent).
    fn is_ended(&self) -> bool;
}

/// A started one-off turn.
pub(crate) struct OneOff {
    temporary: TemporarySession,
    sub: Subscription,
}

impl OneOff {
    /// Starts `chat` (in a fresh session) for `caller`.
    pub(crate) async fn start(
        app: &Arc<App>,
        chat: ChatRequest,
        caller: Caller,
    ) -> Result<OneOff, AgentError> {
        let session = chat.session_id.clone();
        let sub = app.agent.start(chat, caller.clone()).await?;
        // The turn stops when its client leaves (a non-streamed request's future
        // dropped, or a stream's client gone), and its session goes when it ends.
        sub.turn().end_with_clients();
        let temporary = app.agent.temporary_session(&caller, &session, sub.turn());
        Ok(OneOff { temporary, sub })
    }

    /// Relays the whole turn into `sink` (a collecting one), then deletes the
    /// session; dropped on the way (the client left), the turn stops and its
    /// session is deleted all the same.
    pub(crate) async fn collect<S: AnswerSink>(self, sink: &mut S) {
        let OneOff { temporary, sub } = self;
        relay(sub, sink).await;
        temporary.finish().await;
    }

    /// Relays the turn into `sink` (a streaming one) on a task of its own, then
    /// deletes the session.
    pub(crate) fn stream<S: AnswerSink>(self, mut sink: S) {
        tokio::spawn(async move { self.collect(&mut sink).await });
    }
}

/// Relays a turn's chunks into `sink` until the turn ends or the client leaves
/// (then dropping `sub`, its one watcher, stops the turn).
async fn relay<S: AnswerSink>(mut sub: Subscription, sink: &mut S) {
    if sink.begin().await.is_err() {
        return;
    }
    loop {
        match keepalive_while(sink, super::super::chat::KEEPALIVE, sub.next_batch()).await {
            Err(_) | Ok(None) => return,
            Ok(Some(batch)) => {
                if sink.send(&batch).await.is_err() {
                    return;
                }
                if sink.is_ended() {
                    // An `error` ends the answer; the turn's last chunks add nothing.
                    while sub.next_batch().await.is_some() {}
                    return;
                }
            }
        }
    }
}
