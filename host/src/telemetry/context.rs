//! W3C trace context: trace and span ids, the sampled flag and `tracestate`, read
//! from and written to the `traceparent`/`tracestate` values HTTP headers and MCP's
//! `params._meta` carry (<https://www.w3.org/TR/trace-context/>).

use std::fmt;
use std::sync::Arc;

/// The longest `tracestate` kept (the W3C limit is 32 members; 512 bytes is what
/// the recommendation says a vendor must propagate at least).
const MAX_TRACESTATE: usize = 512;
/// The longest W3C `baggage` kept (the W3C Baggage limit is 8192 bytes).
const MAX_BAGGAGE: usize = 8192;

/// 16 bytes naming one trace; never all zero.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId(pub [u8; 16]);

/// 8 bytes naming one span; never all zero.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanId(pub [u8; 8]);

impl TraceId {
    /// A fresh random trace id from the OS's random bytes (`ids`).
    pub(crate) fn random() -> TraceId {
        loop {
            let bytes = crate::ids::random_bytes();
            if bytes != [0; 16] {
                return TraceId(bytes);
            }
        }
    }

    /// The id's last 8 bytes as a number: what ratio sampling compares.
    pub(crate) fn low(&self) -> u64 {
        u64::from_be_bytes(self.0[8..].try_into().expect("8 bytes"))
    }
}

impl SpanId {
    /// A fresh random span id.
    pub(crate) fn random() -> SpanId {
        loop {
            let bytes = crate::ids::random_bytes();
            let id: [u8; 8] = bytes[..8].try_into().expect("8 bytes");
            if id != [0; 8] {
                return SpanId(id);
            }
        }
    }
}

fn hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    for b in bytes {
        write!(f, "{b:02x}")?;
    }
    Ok(())
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        hex(f, &self.0)
    }
}

impl fmt::Debug for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        hex(f, &self.0)
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        hex(f, &self.0)
    }
}

impl fmt::Debug for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        hex(f, &self.0)
    }
}

/// Where a span sits: its trace, its own id, whether the trace is recorded, and
/// the vendors' `tracestate` and the W3C `baggage` passed along unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanContext {
    /// The trace.
    pub trace_id: TraceId,
    /// The span.
    pub span_id: SpanId,
    /// Whether the trace is recorded (the `sampled` flag).
    pub sampled: bool,
    /// `tracestate`, passed along unchanged.
    pub state: Option<Arc<str>>,
    /// W3C `baggage` (<https://www.w3.org/TR/baggage/>), passed along unchanged to
    /// every request the context goes out with.
    pub baggage: Option<Arc<str>>,
}

impl SpanContext {
    /// The `traceparent` value: `00-{trace id}-{span id}-{flags}`.
    pub fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-{}",
            self.trace_id,
            self.span_id,
            if self.sampled { "01" } else { "00" }
        )
    }

    /// The context a `traceparent` (and optional `tracestate`) value names, or
    /// `None` when it is not a valid one: the receiver then starts a new trace, as
    /// the W3C recommendation says.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<SpanContext> {
        let value = traceparent.trim();
        let mut parts = value.split('-');
        let (version, trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let version = hex_bytes::<1>(version)?[0];
        // Version 00 has exactly four fields; a later version may add more after them.
        if version == 0xff || (version == 0 && parts.next().is_some()) {
            return None;
        }
        let trace_id = TraceId(hex_bytes::<16>(trace)?);
        let span_id = SpanId(hex_bytes::<8>(span)?);
        if trace_id.0 == [0; 16] || span_id.0 == [0; 8] {
            return None;
        }
        let flags = hex_bytes::<1>(flags)?[0];
        let state = tracestate
            .map(str::trim)
            .filter(|s| !s.is_empty() && s.len() <= MAX_TRACESTATE && s.is_ascii())
            .map(Arc::from);
        Some(SpanContext {
            trace_id,
            span_id,
            sampled: flags & 1 == 1,
            state,
            baggage: None,
        })
    }

    /// This context carrying `baggage` (a `baggage` header's or `_meta.baggage`
    /// value); an empty, non-ASCII or oversized one (past 8192 bytes) is dropped.
    pub(crate) fn with_baggage(mut self, baggage: Option<&str>) -> SpanContext {
        self.baggage = baggage
            .map(str::trim)
            .filter(|b| !b.is_empty() && b.len() <= MAX_BAGGAGE && b.is_ascii())
            .map(Arc::from);
        self
    }
}

impl SpanContext {
    /// The members of this context's baggage whose key is in `allowed`, as a
    /// `baggage` value (each member as it came, properties included); `None` when
    /// none is left.
    pub(crate) fn baggage_allowed(&self, allowed: &[String]) -> Option<String> {
        let baggage = self.baggage.as_deref()?;
        let kept: Vec<&str> = baggage
            .split(',')
            .map(str::trim)
            .filter(|member| {
                let key = member.split(['=', ';']).next().unwrap_or_default().trim();
                allowed.iter().any(|a| a == key)
            })
            .collect();
        (!kept.is_empty()).then(|| kept.join(","))
    }
}

/// `N` bytes from exactly `2N` lowercase hex digits (upper case is invalid in
/// `traceparent`).
fn hex_bytes<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes();
    if digits.len() != 2 * N {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; N];
    for (i, pair) in digits.chunks_exact(2).enumerate() {
        out[i] = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_traceparent_round_trips() {
        let ctx = SpanContext::parse(VALID, Some("congo=t61rcWkgMzE")).unwrap();
        assert_eq!(ctx.trace_id.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(ctx.span_id.to_string(), "00f067aa0ba902b7");
        assert!(ctx.sampled);
        assert_eq!(ctx.state.as_deref(), Some("congo=t61rcWkgMzE"));
        assert_eq!(ctx.traceparent(), VALID);
        let unsampled = SpanContext::parse(&VALID.replace("-01", "-00"), None).unwrap();
        assert!(!unsampled.sampled && unsampled.state.is_none());
        assert!(unsampled.traceparent().ends_with("-00"));
    }

    #[test]
    fn invalid_traceparents_are_refused() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
        ] {
            assert_eq!(SpanContext::parse(bad, None), None, "{bad}");
        }
        // A later version may carry more fields; the first four are read.
        let later = SpanContext::parse(&format!("{}-{}", VALID.replacen("00", "01", 1), "x"), None);
        assert!(later.is_some());
    }

    #[test]
    fn random_ids_differ_and_are_not_zero() {
        let (a, b) = (TraceId::random(), TraceId::random());
        assert_ne!(a, b);
        assert_ne!(SpanId::random().0, [0; 8]);
    }
}
