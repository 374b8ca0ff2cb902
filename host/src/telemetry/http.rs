//! Trace context at the edges: read from a request's `traceparent`/`tracestate`/
//! `baggage` headers or an MCP request's `params._meta`, written into an outbound
//! request's headers, and the SERVER span of a request a surface serves (named by the
//! OpenTelemetry HTTP conventions: `{method} {http.route}`, the method alone when
//! no route matched; with `url.path`).

use super::context::SpanContext;
use super::span::{Kind, Span};
use http::{HeaderMap, HeaderValue};

/// The context of a `traceparent` and optional `tracestate` in HTTP headers.
pub(crate) fn from_headers(headers: &HeaderMap) -> Option<SpanContext> {
    super::installed()?;
    let parent = headers.get("traceparent")?.to_str().ok()?;
    let state = headers.get("tracestate").and_then(|v| v.to_str().ok());
    let baggage = headers.get("baggage").and_then(|v| v.to_str().ok());
    SpanContext::parse(parent, state).map(|c| c.with_baggage(baggage))
}

/// The context in an MCP request's `params._meta` (`traceparent`, `tracestate`,
/// `baggage`).
pub(crate) fn from_meta(params: Option<&serde_json::Value>) -> Option<SpanContext> {
    super::installed()?;
    let meta = params?.get("_meta")?;
    let parent = meta.get("traceparent")?.as_str()?;
    let context = SpanContext::parse(parent, meta.get("tracestate").and_then(|v| v.as_str()))?;
    Some(context.with_baggage(meta.get("baggage").and_then(|v| v.as_str())))
}

/// Writes `context` as `traceparent` (and its `tracestate`, and the baggage
/// `telemetry.forward_baggage` lets out) into the `headers` of a request to a third
/// party, replacing any there.
pub(crate) fn inject(headers: &mut HeaderMap, context: Option<&SpanContext>) {
    let baggage = context.and_then(super::forwarded_baggage);
    inject_with(headers, context, baggage)
}

/// [`inject`] with the `baggage` to send.
fn inject_with(headers: &mut HeaderMap, context: Option<&SpanContext>, baggage: Option<String>) {
    let Some(context) = context else {
        return;
    };
    if let Ok(value) = HeaderValue::from_str(&context.traceparent()) {
        headers.insert("traceparent", value);
    }
    match context.state.as_deref().map(HeaderValue::from_str) {
        Some(Ok(state)) => {
            headers.insert("tracestate", state);
        }
        _ => {
            headers.remove("tracestate");
        }
    }
    match baggage.as_deref().map(HeaderValue::from_str) {
        Some(Ok(baggage)) => {
            headers.insert("baggage", baggage);
        }
        _ => {
            headers.remove("baggage");
        }
    }
}

/// `context` as an MCP request's `params._meta` entries (`traceparent`,
/// `tracestate`, and the baggage `telemetry.forward_baggage` lets out), for a
/// request to an external MCP server; keys already in `meta` are replaced.
pub(crate) fn into_meta(meta: &mut serde_json::Map<String, serde_json::Value>, context: &SpanContext) {
    use serde_json::Value;
    meta.insert("traceparent".into(), Value::String(context.traceparent()));
    match &context.state {
        Some(state) => meta.insert("tracestate".into(), Value::String(state.to_string())),
        None => meta.remove("tracestate"),
    };
    match super::forwarded_baggage(context) {
        Some(baggage) => meta.insert("baggage".into(), Value::String(baggage)),
        None => meta.remove("baggage"),
    };
}

/// The SERVER span of a request to `path`, which matched the path template
/// `route` (`None`: no route), under the caller's `traceparent`.
pub(crate) fn server_span(
    method: &http::Method,
    path: &str,
    route: Option<&str>,
    headers: &HeaderMap,
) -> Span {
    let parent = from_headers(headers);
    let mut span = match route {
        Some(route) => Span::child_of(parent.as_ref(), Kind::Server, format_args!("{method} {route}")),
        None => Span::child_of(parent.as_ref(), Kind::Server, format_args!("{method}")),
    };
    if span.recording() {
        span.set("http.request.method", method.as_str());
        span.set("url.path", path);
        if let Some(route) = route {
            span.set("http.route", route);
        }
    }
    span
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_is_written_into_headers() {
        let ctx = SpanContext::parse(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            Some("a=b"),
        )
        .unwrap();
        let mut headers = HeaderMap::new();
        headers.insert("tracestate", HeaderValue::from_static("old=1"));
        inject(&mut headers, Some(&ctx));
        assert_eq!(headers["traceparent"], ctx.traceparent().as_str());
        assert_eq!(headers["tracestate"], "a=b");
        assert!(headers.get("baggage").is_none());
        let plain = SpanContext { state: None, ..ctx };
        inject(&mut headers, Some(&plain));
        assert!(headers.get("tracestate").is_none());
        let carried = plain
            .clone()
            .with_baggage(Some(" user=alice,tier=gold;p=1 , x=y "));
        // The client's baggage goes on only as far as `telemetry.forward_baggage`
        // allows: by default, not at all.
        headers.insert("baggage", HeaderValue::from_static("old=1"));
        inject(&mut headers, Some(&carried));
        assert!(headers.get("baggage").is_none());
        let allowed = ["tier".to_string(), "x".to_string()];
        inject_with(&mut headers, Some(&carried), carried.baggage_allowed(&allowed));
        assert_eq!(headers["baggage"], "tier=gold;p=1,x=y");
        assert_eq!(carried.baggage_allowed(&["nope".into()]), None);
        assert_eq!(
            carried.baggage_allowed(&["user".into()]).as_deref(),
            Some("user=alice")
        );
        assert!(plain.clone().with_baggage(Some("")).baggage.is_none());
        assert!(plain.clone().with_baggage(Some("k=é")).baggage.is_none());
        let oversized = format!("k={}", "v".repeat(8192));
        assert!(plain.with_baggage(Some(&oversized)).baggage.is_none());
    }
}
