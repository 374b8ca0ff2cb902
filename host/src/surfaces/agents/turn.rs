//! A one-off turn of the agent loop for the stateless APIs (Chat Completions,
//! Messages, `POST /v1/agents/{name}`): the client sends the whole conversation,
//! the turn runs in a session of its own, stops when its client leaves (these
//! APIs cannot resume), and the session is deleted when it ends.
//!
//! Each API answers through its own [`AnswerSink`]: collecting one answer for a
//! non-streamed request, or writing its own event stream.

use super::super::App;
use crate::agent::{AgentError, ChatRequest, Subscription};
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
    app: Arc<App>,
    caller: Caller,
    session: String,
    sub: Subscription,
}

/// The client left while a turn was relayed; holds its subscription.
struct Left(Subscription);

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
        // dropped, or a stream's client gone).
        sub.turn().end_with_clients();
        Ok(OneOff {
            app: app.clone(),
            caller,
            session,
            sub,
        })
    }

    /// Relays the whole turn into `sink` (a collecting one), then deletes the session.
    pub(crate) async fn collect<S: AnswerSink>(self, sink: &mut S) {
        let OneOff {
            app,
            caller,
            session,
            sub,
        } = self;
        if let Err(left) = relay(sub, sink).await {
            wind_down(left).await;
        }
        forget(&app, &caller, &session).await;
    }

    /// Relays the turn into `sink` (a streaming one) on a task of its own, then
    /// deletes the session.
    pub(crate) fn stream<S: AnswerSink>(self, mut sink: S) {
        tokio::spawn(async move { self.collect(&mut sink).await });
    }
}

/// The client left: dropping its subscription stops the turn; let it wind down
/// before its session can go.
async fn wind_down(left: Left) {
    let turn = left.0.turn().clone();
    drop(left);
    let mut watcher = turn.subscribe();
    while watcher.next_batch().await.is_some() {}
}

/// Relays a turn's chunks into `sink` until the turn ends.
async fn relay<S: AnswerSink>(mut sub: Subscription, sink: &mut S) -> Result<(), Left> {
    if sink.begin().await.is_err() {
        return Err(Left(sub));
    }
    loop {
        match keepalive_while(sink, super::super::chat::KEEPALIVE, sub.next_batch()).await {
            Err(_closed) => return Err(Left(sub)),
            Ok(None) => return Ok(()),
            Ok(Some(batch)) => {
                if sink.send(&batch).await.is_err() {
                    return Err(Left(sub));
                }
                if sink.is_ended() {
                    // An `error` ends the answer; the turn's last chunks add nothing.
                    while sub.next_batch().await.is_some() {}
                    return Ok(());
                }
            }
        }
    }
}

/// Deletes the turn's session (these APIs keep no conversation).
async fn forget(app: &App, caller: &Caller, session: &str) {
    if let Err(e) = app.agent.delete_session(caller, session).await {
        crate::warn!("agent surfaces: cannot delete the session {session} of a finished turn: {e}");
    }
}
