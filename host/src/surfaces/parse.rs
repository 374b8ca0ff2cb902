//! How a surface reads and parses a request body. The body is read whole, bounded
//! by `server.max_body_kb`, then parsed: in place when it is small, and on the
//! low-priority blocking pool (`runtime::cpu`) when it is
//! `limits.validate_blocking_kb` or more, one of the caller's CPU-share permits at
//! a time. Parsing a few hundred KiB of JSON costs milliseconds of CPU; on an
//! async worker it would hold up every other client's requests on that worker, so
//! a client posting large bodies spends its own share of the cores, not theirs.

use super::App;
use super::respond::{self, BodyError};
use crate::runtime::CpuShares;
use crate::timing::{self, Stage};
use bytes::Bytes;
use hyper::body::Incoming;
use std::sync::Arc;
use std::time::Instant;

/// How request bodies are read and parsed.
pub(crate) struct BodyParser<'a> {
    /// The largest body read, in bytes (`server.max_body_kb`).
    max_body: usize,
    /// Bodies of this many bytes or more are parsed on the blocking pool; `None`:
    /// every body is parsed in place.
    offload: Option<(&'a Arc<CpuShares>, usize)>,
}

impl App {
    /// The body parser of this hub's configuration.
    pub(crate) fn body_parser(&self) -> BodyParser<'_> {
        let large = self.config.limits.validation.blocking_bytes();
        BodyParser {
            max_body: (self.config.server.max_body_kb as usize).saturating_mul(1024),
            offload: Some((self.hub.runtime().cpu_shares(), large)),
        }
    }
}

impl BodyParser<'static> {
    /// A parser that reads up to `max_body` bytes and parses everything in place
    /// (a surface's unit tests, which run no hub).
    #[cfg(test)]
    pub(crate) fn in_place(max_body: usize) -> BodyParser<'static> {
        BodyParser {
            max_body,
            offload: None,
        }
    }
}

impl BodyParser<'_> {
    /// Reads the whole body, failing as soon as it passes `server.max_body_kb`.
    pub(crate) async fn read(&self, body: Incoming) -> Result<Bytes, BodyError> {
        let started = Instant::now();
        let read = respond::read_body(body, self.max_body).await;
        timing::record(Stage::ReadBody, started);
        read
    }

    /// `parse(body)`, for `tenant` (the caller's token name). A parse that never
    /// finished (it panicked, or the hub is shutting down) is a
    /// [`BodyError::Read`]: nothing was read.
    pub(crate) async fn parse<T: Send + 'static>(
        &self,
        tenant: &str,
        body: Bytes,
        parse: impl FnOnce(&[u8]) -> T + Send + 'static,
    ) -> Result<T, BodyError> {
        let started = Instant::now();
        let parsed = match self.offload {
            Some((cpu, large)) if body.len() >= large => {
                let tenant: Arc<str> = tenant.into();
                cpu.blocking(&tenant, move || parse(&body))
                    .await
                    .map_err(|e| BodyError::Read(Box::new(e)))
            }
            _ => Ok(parse(&body)),
        };
        timing::record(Stage::ParseBody, started);
        parsed
    }
}
