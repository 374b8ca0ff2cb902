//! Finished spans as an OTLP/HTTP JSON `ExportTraceServiceRequest`
//! (<https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding>): field
//! names in lowerCamelCase, trace and span ids as hex (not base64, the one place
//! OTLP departs from protobuf's JSON mapping), 64-bit integers and the
//! `*UnixNano` times as decimal strings, enums as their numbers.

use super::span::{AttrValue, Attributes, SpanData};
use serde_json::{Value, json};

/// The request body for `spans`, from the service `service_name`, replica
/// `instance`.
pub(crate) fn encode(service_name: &str, instance: &str, spans: &[Box<SpanData>]) -> Vec<u8> {
    let spans: Vec<Value> = spans.iter().map(|s| span(s)).collect();
    let body = json!({
        "resourceSpans": [{
            "resource": {"attributes": attributes(&vec![
                ("service.name", AttrValue::Str(service_name.to_string())),
                ("service.version", AttrValue::Str(env!("CARGO_PKG_VERSION").to_string())),
                ("service.instance.id", AttrValue::Str(instance.to_string())),
            ])},
            "scopeSpans": [{
                "scope": {"name": "wasmhub", "version": env!("CARGO_PKG_VERSION")},
                "spans": spans,
            }],
        }],
    });
    serde_json::to_vec(&body).expect("a JSON value serializes")
}

fn span(s: &SpanData) -> Value {
    let mut out = json!({
        "traceId": s.context.trace_id.to_string(),
        "spanId": s.context.span_id.to_string(),
        "name": s.name,
        "kind": s.kind as i64,
        "startTimeUnixNano": s.start_ns.to_string(),
        "endTimeUnixNano": s.end_ns.max(s.start_ns).to_string(),
        "attributes": attributes(&s.attributes),
    });
    if let Some(parent) = s.parent {
        out["parentSpanId"] = Value::String(parent.to_string());
    }
    if let Some(state) = &s.context.state {
        out["traceState"] = Value::String(state.to_string());
    }
    if !s.events.is_empty() {
        out["events"] = s
            .events
            .iter()
            .map(|e| {
                json!({
                    "timeUnixNano": e.time_ns.to_string(),
                    "name": e.name,
                    "attributes": attributes(&e.attributes),
                })
            })
            .collect();
    }
    if !s.links.is_empty() {
        out["links"] = s
            .links
            .iter()
            .map(|l| json!({"traceId": l.trace_id.to_string(), "spanId": l.span_id.to_string()}))
            .collect();
    }
    if let Some(message) = &s.error {
        // STATUS_CODE_ERROR.
        out["status"] = json!({"code": 2, "message": message});
    }
    out
}

fn attributes(attrs: &Attributes) -> Value {
    attrs
        .iter()
        .map(|(key, value)| json!({"key": key, "value": any_value(value)}))
        .collect()
}

fn any_value(value: &AttrValue) -> Value {
    match value {
        AttrValue::Str(s) => json!({"stringValue": s}),
        AttrValue::Int(n) => json!({"intValue": n.to_string()}),
        AttrValue::Bool(b) => json!({"boolValue": b}),
        AttrValue::Double(x) => json!({"doubleValue": x}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::context::{SpanContext, SpanId, TraceId};
    use crate::telemetry::span::{Event, Kind};

    #[test]
    fn spans_encode_as_otlp_json() {
        let context = SpanContext {
            trace_id: TraceId([0xab; 16]),
            span_id: SpanId([0x01; 8]),
            sampled: true,
            state: Some("k=v".into()),
            baggage: None,
        };
        let span = Box::new(SpanData {
            context: context.clone(),
            parent: Some(SpanId([0x02; 8])),
            name: "tools/call hub_call".into(),
            kind: Kind::Server,
            start_ns: 1_000,
            end_ns: 2_000,
            attributes: vec![
                ("mcp.method.name", AttrValue::from("tools/call")),
                ("jsonrpc.request.id", AttrValue::from(7u64)),
                ("ok", AttrValue::from(true)),
            ],
            events: vec![Event {
                time_ns: 1_500,
                name: "approval.requested",
                attributes: Vec::new(),
            }],
            links: vec![context],
            error: Some("tool_error".into()),
        });
        let body: Value = serde_json::from_slice(&encode("hub", "r1", &[span])).unwrap();
        let resource = &body["resourceSpans"][0];
        assert_eq!(
            resource["resource"]["attributes"][0]["value"]["stringValue"],
            "hub"
        );
        let s = &resource["scopeSpans"][0]["spans"][0];
        assert_eq!(s["traceId"], "ab".repeat(16));
        assert_eq!(s["spanId"], "01".repeat(8));
        assert_eq!(s["parentSpanId"], "02".repeat(8));
        assert_eq!(s["traceState"], "k=v");
        assert_eq!(s["kind"], 2);
        assert_eq!(s["startTimeUnixNano"], "1000");
        assert_eq!(s["endTimeUnixNano"], "2000");
        assert_eq!(s["attributes"][1]["value"]["intValue"], "7");
        assert_eq!(s["attributes"][2]["value"]["boolValue"], true);
        assert_eq!(s["events"][0]["timeUnixNano"], "1500");
        assert_eq!(s["links"][0]["spanId"], "01".repeat(8));
        assert_eq!(s["status"]["code"], 2);
    }
}
