//! The one response body type every surface returns: a whole buffer, or a stream of
//! frames fed through a bounded channel.
//!
//! The channel is bounded on purpose: a slow client makes the producer wait instead
//! of making the hub buffer without limit. When the client goes away the receiver is
//! dropped and the producer's next `send` fails, which is how producers notice a
//! disconnect and cancel their work.

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// A response body.
pub enum Body {
    /// The whole body at once (`None` once sent, or for an empty body).
    Full(Option<Bytes>),
    /// Frames as the producer sends them; the body ends when the sender is dropped.
    Stream(mpsc::Receiver<Bytes>),
    /// Another body, with something that must live until the body is sent or
    /// dropped (a surface's turn, `surfaces::limit::Permit`).
    Holding(Box<Body>, Box<dyn std::any::Any + Send + Sync>),
}

impl Body {
    /// A body with no bytes.
    pub fn empty() -> Body {
        Body::Full(None)
    }

    /// A body of `bytes`, sent in one frame.
    pub fn full(bytes: impl Into<Bytes>) -> Body {
        Body::Full(Some(bytes.into()))
    }

    /// A streaming body and the sender that feeds it. `capacity` is the number of
    /// frames the channel holds before `send` waits for the client.
    pub fn channel(capacity: usize) -> (mpsc::Sender<Bytes>, Body) {
        let (tx, rx) = mpsc::channel(capacity);
        (tx, Body::Stream(rx))
    }
}

impl Body {
    /// This body, keeping `guard` alive until it is sent or dropped.
    pub fn holding(self, guard: Box<dyn std::any::Any + Send + Sync>) -> Body {
        Body::Holding(Box::new(self), guard)
    }
}

impl HttpBody for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Body::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Body::Stream(rx) => rx.poll_recv(cx).map(|item| item.map(|b| Ok(Frame::data(b)))),
            Body::Holding(inner, _) => Pin::new(inner.as_mut()).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Body::Holding(inner, _) => inner.is_end_stream(),
            other => matches!(other, Body::Full(None)),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Body::Full(None) => SizeHint::with_exact(0),
            Body::Stream(_) => SizeHint::default(),
            Body::Holding(inner, _) => inner.size_hint(),
        }
    }
}
