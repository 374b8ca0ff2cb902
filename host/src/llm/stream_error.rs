//! Why reading an upstream event stream stopped ([`StreamError`]): below the
//! event reader (`super::stream`), the terminal-state reader (`super::terminal`)
//! and the route's retries (`super::route`), which all name it.

use super::client::ResponseBodyError;
use crate::sse::ParseError;

/// Why reading upstream events stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamError {
    Body(ResponseBodyError),
    Parse(ParseError),
}

impl std::fmt::Display for StreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamError::Body(e) => e.fmt(f),
            StreamError::Parse(e) => write!(f, "the upstream stream is unusable: {e}"),
        }
    }
}

impl std::error::Error for StreamError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StreamError::Body(e) => Some(e),
            StreamError::Parse(e) => Some(e),
        }
    }
}
