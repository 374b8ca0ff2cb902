//! One span: started with a parent (or as a trace's root, sampled by the ratio),
//! given attributes, events, links and an error as the work goes, and handed to
//! the export queue when dropped. A span of a trace that is not sampled (or with
//! telemetry off, or while the collector is down) records nothing and costs no
//! allocation; it still has a context
//! to propagate when telemetry is on, so the services after the hub see the
//! sampling decision.

use super::context::{SpanContext, SpanId, TraceId};
use std::fmt;

/// The OpenTelemetry span kind (the OTLP enum's numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Work inside the hub (an operation call, an agent turn).
    Internal = 1,
    /// A request the hub serves.
    Server = 2,
    /// A request the hub makes (a model call, a plugin's outbound HTTP).
    Client = 3,
}

/// An attribute's value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum AttrValue {
    Str(String),
    Int(i64),
    Bool(bool),
    Double(f64),
}

impl From<&str> for AttrValue {
    fn from(s: &str) -> AttrValue {
        AttrValue::Str(s.to_string())
    }
}

impl From<String> for AttrValue {
    fn from(s: String) -> AttrValue {
        AttrValue::Str(s)
    }
}

impl From<i64> for AttrValue {
    fn from(n: i64) -> AttrValue {
        AttrValue::Int(n)
    }
}

impl From<u64> for AttrValue {
    fn from(n: u64) -> AttrValue {
        AttrValue::Int(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

impl From<bool> for AttrValue {
    fn from(b: bool) -> AttrValue {
        AttrValue::Bool(b)
    }
}

impl From<f64> for AttrValue {
    fn from(x: f64) -> AttrValue {
        AttrValue::Double(x)
    }
}

/// Attributes in the order they were set (a key set twice keeps its last value).
pub(crate) type Attributes = Vec<(&'static str, AttrValue)>;

/// Something that happened at a moment of a span (an approval wait, its answer).
#[derive(Clone, Debug)]
pub(crate) struct Event {
    pub time_ns: u64,
    pub name: &'static str,
    pub attributes: Attributes,
}

/// A finished span, as the exporter encodes it.
#[derive(Debug)]
pub(crate) struct SpanData {
    pub context: SpanContext,
    pub parent: Option<SpanId>,
    pub name: String,
    pub kind: Kind,
    pub start_ns: u64,
    pub end_ns: u64,
    pub attributes: Attributes,
    pub events: Vec<Event>,
    pub links: Vec<SpanContext>,
    /// The status's message when the span failed (status ERROR); `None`: unset.
    pub error: Option<String>,
}

/// A span being recorded; ends when dropped.
#[derive(Debug, Default)]
pub(crate) struct Span {
    context: Option<SpanContext>,
    data: Option<Box<SpanData>>,
}

impl Span {
    /// A span that records and propagates nothing.
    pub(crate) fn none() -> Span {
        Span::default()
    }

    /// A span named `name` under `parent` (the current span when `None` is given
    /// by [`Span::start`]); a new trace when there is no parent.
    pub(crate) fn child_of(parent: Option<&SpanContext>, kind: Kind, name: fmt::Arguments<'_>) -> Span {
        let Some(telemetry) = super::installed() else {
            return Span::none();
        };
        let trace_id = parent.map_or_else(TraceId::random, |p| p.trace_id);
        let context = SpanContext {
            trace_id,
            span_id: SpanId::random(),
            sampled: telemetry.samples(parent, &trace_id),
            state: parent.and_then(|p| p.state.clone()),
            baggage: parent.and_then(|p| p.baggage.clone()),
        };
        // Sampled out, or the collector is down: nothing is built.
        let data = (context.sampled && super::accepting()).then(|| {
            Box::new(SpanData {
                context: context.clone(),
                parent: parent.map(|p| p.span_id),
                name: name.to_string(),
                kind,
                start_ns: now_ns(),
                end_ns: 0,
                attributes: Vec::new(),
                events: Vec::new(),
                links: Vec::new(),
                error: None,
            })
        });
        Span {
            context: Some(context),
            data,
        }
    }

    /// A span under the task's current span (`telemetry::current`).
    pub(crate) fn start(kind: Kind, name: fmt::Arguments<'_>) -> Span {
        Span::child_of(super::current().as_ref(), kind, name)
    }

    /// This span's context, to make children of or to propagate; `None` with
    /// telemetry off.
    pub(crate) fn context(&self) -> Option<&SpanContext> {
        self.context.as_ref()
    }

    /// Whether the span records (its trace is sampled): set attributes that cost
    /// something to compute only then.
    pub(crate) fn recording(&self) -> bool {
        self.data.is_some()
    }

    /// Moves the span's start `earlier` back: a span recorded once its work is
    /// over (a wait that turned out long).
    pub(crate) fn began_before(&mut self, earlier: std::time::Duration) {
        if let Some(data) = &mut self.data {
            data.start_ns = data.start_ns.saturating_sub(earlier.as_nanos() as u64);
        }
    }

    /// Sets an attribute.
    pub(crate) fn set(&mut self, key: &'static str, value: impl Into<AttrValue>) {
        if let Some(data) = &mut self.data {
            let value = value.into();
            match data.attributes.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => data.attributes.push((key, value)),
            }
        }
    }

    /// Records an event at this moment.
    pub(crate) fn event(&mut self, name: &'static str, attributes: Attributes) {
        if let Some(data) = &mut self.data {
            data.events.push(Event {
                time_ns: now_ns(),
                name,
                attributes,
            });
        }
    }

    /// Links another context (an MCP request's HTTP `traceparent`, which is not
    /// its parent).
    pub(crate) fn link(&mut self, other: SpanContext) {
        if let Some(data) = &mut self.data {
            data.links.push(other);
        }
    }

    /// Marks the span failed: `error.type` (the conventions' attribute) and the
    /// status ERROR with `message`.
    pub(crate) fn fail(&mut self, error_type: &str, message: &str) {
        if let Some(data) = &mut self.data {
            data.error = Some(message.to_string());
        }
        self.set("error.type", error_type);
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        if let Some(mut data) = self.data.take() {
            data.end_ns = now_ns();
            if let Some(telemetry) = super::installed() {
                telemetry.finished(data);
            }
        }
    }
}

/// Nanoseconds since the Unix epoch (the OTLP timestamps), from the one wall clock.
fn now_ns() -> u64 {
    crate::clock::now_ns()
}
