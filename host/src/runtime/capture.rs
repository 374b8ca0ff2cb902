//! Bounded capture of a call's stdout and stderr.
//!
//! Both streams write into one shared buffer capped at the plugin's `log_kb`. Unlike
//! wasmtime-wasi's `MemoryOutputPipe`, this pipe remembers that a write went past the
//! cap, so the runtime reports `OutputLimit` whether the guest trapped on the failed
//! write or swallowed the error and returned normally.

use bytes::Bytes;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};

#[derive(Default)]
struct Buffer {
    bytes: Vec<u8>,
    overflowed: bool,
}

/// A bounded, shared output buffer. Clones write to the same buffer.
#[derive(Clone)]
pub(super) struct CapturePipe {
    capacity: usize,
    buffer: Arc<Mutex<Buffer>>,
}

impl CapturePipe {
    pub(super) fn new(capacity: usize) -> CapturePipe {
        CapturePipe {
            capacity,
            buffer: Arc::new(Mutex::new(Buffer::default())),
        }
    }

    /// Whether a write was refused because the buffer was full.
    pub(super) fn overflowed(&self) -> bool {
        self.lock().overflowed
    }

    /// What was written so far, lossily decoded.
    pub(super) fn text(&self) -> String {
        String::from_utf8_lossy(&self.lock().bytes).into_owned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Buffer> {
        // A poisoned lock only means another writer panicked mid-append; the bytes
        // are still a valid (if partial) log.
        self.buffer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends what fits; returns false (and remembers it) when `data` did not fit.
    fn append(&self, data: &[u8]) -> bool {
        let mut buf = self.lock();
        let room = self.capacity - buf.bytes.len();
        if data.len() > room {
            buf.bytes.extend_from_slice(&data[..room]);
            buf.overflowed = true;
            return false;
        }
        buf.bytes.extend_from_slice(data);
        true
    }
}

fn limit_trap() -> StreamError {
    StreamError::Trap(wasmtime::format_err!(
        "output limit exceeded: stdout/stderr capture is full"
    ))
}

#[wasmtime_wasi::async_trait]
impl OutputStream for CapturePipe {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        if self.append(&bytes) {
            Ok(())
        } else {
            Err(limit_trap())
        }
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        let mut buf = self.lock();
        match self.capacity - buf.bytes.len() {
            // Full: another write can only go past the cap. Trapping here, rather
            // than reporting 0 bytes of room, keeps a blocking writer from waiting
            // for room that never comes.
            0 => {
                buf.overflowed = true;
                Err(limit_trap())
            }
            room => Ok(room),
        }
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CapturePipe {
    async fn ready(&mut self) {}
}

impl AsyncWrite for CapturePipe {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        if self.append(data) {
            Poll::Ready(Ok(data.len()))
        } else {
            Poll::Ready(Err(io::Error::other("output limit exceeded")))
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl IsTerminal for CapturePipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CapturePipe {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_past_the_cap_are_remembered() {
        let mut pipe = CapturePipe::new(8);
        assert!(OutputStream::write(&mut pipe, Bytes::from_static(b"hello")).is_ok());
        assert_eq!(pipe.check_write().unwrap(), 3);
        assert!(!pipe.overflowed());
        assert!(OutputStream::write(&mut pipe, Bytes::from_static(b"world")).is_err());
        assert!(pipe.overflowed());
        assert_eq!(pipe.text(), "hellowor");
        assert!(pipe.check_write().is_err());
    }
}
