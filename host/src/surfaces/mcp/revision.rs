//! Which MCP revision a message speaks, and the per-request envelope checks of the
//! stateless 2026-07-28 revision.
//!
//! # The detection rule
//!
//! Both live revisions share one endpoint, so every POST is placed by what it
//! carries, first match wins:
//!
//! 1. an `Mcp-Session-Id` header → the **handshake era** (2025-11-25 and older):
//!    only that era has sessions;
//! 2. an `MCP-Protocol-Version` header naming anything but a handshake-era
//!    version (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25) → **stateless**
//!    (2026-07-28); an unknown value is then answered with
//!    `UnsupportedProtocolVersion` (-32022) listing what we serve, which is how a
//!    2026 client learns our versions;
//! 3. a body whose method is `server/discover` or whose `params._meta` carries
//!    `io.modelcontextprotocol/protocolVersion` → **stateless** (without the
//!    header that request then fails the header check with -32020, as the
//!    revision requires);
//! 4. anything else → the **handshake era**: `initialize` opens a session.
//!
//! This matches what real clients send: 2025 clients send no version header on
//! `initialize` and their negotiated (handshake-era) version afterwards; 2026
//! clients send `MCP-Protocol-Version: 2026-07-28` on every request; the Python
//! SDK's `auto` mode probes `server/discover` first and falls back to
//! `initialize` on an error. Over stdio there are no headers, so only rule 3
//! applies (and the header checks are skipped).

use super::jsonrpc::{self, Request, RpcError};
use super::method::McpMethod;
use serde_json::{Value, json};

pub(crate) use crate::mcp_wire::versions::{
    HANDSHAKE_VERSIONS, LATEST_HANDSHAKE_VERSION, META_CLIENT_CAPABILITIES, META_CLIENT_INFO,
    META_PROTOCOL_VERSION, META_SERVER_INFO, STATELESS_VERSION, SUPPORTED_VERSIONS,
};

/// The two protocol families served on one endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Revision {
    /// 2025-11-25 and older: `initialize`, sessions, `ping`.
    Handshake,
    /// 2026-07-28: per-request `_meta`, `server/discover`, no sessions.
    Stateless,
}

/// The transport facts the detection rule looks at.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RevisionClues<'a> {
    pub has_session_id: bool,
    pub version_header: Option<&'a str>,
    /// The body looks stateless (see [`body_is_stateless`]).
    pub stateless_body: bool,
}

/// Applies the detection rule of this module's documentation.
pub(crate) fn detect(clues: RevisionClues<'_>) -> Revision {
    if clues.has_session_id {
        return Revision::Handshake;
    }
    if let Some(v) = clues.version_header
        && handshake_version(v).is_none()
    {
        return Revision::Stateless;
    }
    if clues.stateless_body {
        Revision::Stateless
    } else {
        Revision::Handshake
    }
}

/// Rule 3: `server/discover`, or a `params._meta` carrying the protocol version.
pub(crate) fn body_is_stateless(method: Option<McpMethod>, params: Option<&Value>) -> bool {
    method == Some(McpMethod::ServerDiscover)
        || params
            .and_then(|p| p.get("_meta"))
            .and_then(Value::as_object)
            .is_some_and(|m| m.contains_key(META_PROTOCOL_VERSION))
}

/// `v` as one of our handshake-era versions.
pub(crate) fn handshake_version(v: &str) -> Option<&'static str> {
    HANDSHAKE_VERSIONS
        .iter()
        .copied()
        .find(|known| *known == v.trim())
}

/// The version answered to `initialize`: the requested one when served, else the
/// newest handshake-era version (the client then decides whether to continue).
pub(crate) fn negotiate(requested: Option<&str>) -> &'static str {
    requested
        .and_then(handshake_version)
        .unwrap_or(LATEST_HANDSHAKE_VERSION)
}

/// The version to answer an `initialize` with: [`negotiate`] of its
/// `params.protocolVersion`, which the request must carry (-32602 otherwise).
pub(crate) fn negotiate_initialize(req: &Request) -> Result<&'static str, RpcError> {
    let requested = req.params_object().and_then(|p| p.get("protocolVersion"));
    match requested.and_then(Value::as_str) {
        Some(requested) => Ok(negotiate(Some(requested))),
        None => Err(RpcError::invalid_params(
            "initialize needs params.protocolVersion (a string)",
        )),
    }
}

/// JSON-RPC batches were part of 2025-03-26 (and 2024-11-05's JSON-RPC) and were
/// removed in 2025-06-18; the stateless revision has none either.
pub(crate) fn batches_allowed(version: &str) -> bool {
    matches!(version, "2025-03-26" | "2024-11-05")
}

/// The routing headers of a stateless HTTP request (absent on stdio).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RoutingHeaders<'a> {
    pub protocol_version: Option<&'a str>,
    pub method: Option<&'a str>,
    pub name: Option<&'a str>,
}

/// What a valid stateless envelope declared.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Envelope {
    pub version: &'static str,
    pub client_capabilities: Value,
}

/// The stateless revision's checks, in its order (first failure wins):
/// `_meta` carries the protocol version and client capabilities (-32602); the
/// routing headers, when given, agree with the body (-32020); the version is one we
/// serve (-32022, data `{supported, requested}`).
pub(crate) fn check_envelope(
    req: &Request,
    headers: Option<RoutingHeaders<'_>>,
) -> Result<Envelope, RpcError> {
    let Some(meta) = req.meta() else {
        return Err(RpcError::invalid_params(format!(
            "params._meta must be an object carrying {META_PROTOCOL_VERSION:?} and {META_CLIENT_CAPABILITIES:?} \
             (protocol revision {STATELESS_VERSION})"
        )));
    };
    let missing: Vec<&str> = [META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES]
        .into_iter()
        .filter(|k| !meta.contains_key(*k))
        .collect();
    if !missing.is_empty() {
        return Err(RpcError::invalid_params(format!(
            "params._meta is missing the required key(s): {}",
            missing.join(", ")
        )));
    }
    let version = &meta[META_PROTOCOL_VERSION];
    if let Some(h) = headers {
        check_headers(req, version, h)?;
    }
    let Some(version) = version.as_str() else {
        return Err(RpcError::invalid_params(format!(
            "{META_PROTOCOL_VERSION} must be a string"
        )));
    };
    if version != STATELESS_VERSION {
        return Err(unsupported_version(version));
    }
    let caps = meta[META_CLIENT_CAPABILITIES].clone();
    if !caps.is_object() {
        return Err(RpcError::invalid_params(format!(
            "{META_CLIENT_CAPABILITIES} must be an object"
        )));
    }
    Ok(Envelope {
        version: STATELESS_VERSION,
        client_capabilities: caps,
    })
}

fn check_headers(req: &Request, version: &Value, h: RoutingHeaders<'_>) -> Result<(), RpcError> {
    let mismatch = |what: &str| RpcError::new(jsonrpc::HEADER_MISMATCH, what.to_string());
    match (h.protocol_version.map(str::trim), version.as_str()) {
        (Some(header), Some(body)) if header == body => {}
        (None, _) => {
            return Err(mismatch(
                "the MCP-Protocol-Version header is required on every request",
            ));
        }
        _ => {
            return Err(mismatch(
                "the MCP-Protocol-Version header does not match params._meta's protocol version",
            ));
        }
    }
    match h.method.map(str::trim) {
        Some(m) if m == req.method => {}
        Some(_) => return Err(mismatch("the Mcp-Method header does not match the body's method")),
        None => return Err(mismatch("the Mcp-Method header is required on every request")),
    }
    if let Some(key) = req.known_method().and_then(McpMethod::name_param)
        && let Some(body_value) = req.params_object().and_then(|p| p.get(key))
    {
        let header = h.name.map(str::trim).and_then(decode_header_value);
        if header.as_deref() != body_value.as_str() {
            return Err(mismatch(&format!(
                "the Mcp-Name header does not match the body's {key:?}"
            )));
        }
    }
    Ok(())
}

/// `UnsupportedProtocolVersion` naming every version we serve.
pub(crate) fn unsupported_version(requested: &str) -> RpcError {
    RpcError::new(
        jsonrpc::UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "unsupported protocol version {requested:?}; this server speaks {}",
            SUPPORTED_VERSIONS.join(", ")
        ),
    )
    .with_data(json!({ "supported": SUPPORTED_VERSIONS, "requested": requested }))
}

/// Header values may be `=?base64?PAYLOAD?=` (for non-ASCII names); anything else
/// is literal. A malformed or non-canonical payload decodes to `None`, so it never
/// matches a body value by accident.
pub(crate) fn decode_header_value(value: &str) -> Option<String> {
    let Some(payload) = value.strip_prefix("=?base64?").and_then(|v| v.strip_suffix("?=")) else {
        return Some(value.to_string());
    };
    let bytes = crate::base64::decode(payload)?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(method: &str, params: Value) -> Request {
        Request {
            id: json!(1),
            method: method.into(),
            params: Some(params),
        }
    }

    fn meta() -> Value {
        json!({ META_PROTOCOL_VERSION: STATELESS_VERSION, META_CLIENT_CAPABILITIES: {} })
    }

    fn headers<'a>(method: &'a str, name: Option<&'a str>) -> RoutingHeaders<'a> {
        RoutingHeaders {
            protocol_version: Some(STATELESS_VERSION),
            method: Some(method),
            name,
        }
    }

    #[test]
    fn detection_follows_the_documented_rule() {
        let d = |has_session_id, version_header, stateless_body| {
            detect(RevisionClues {
                has_session_id,
                version_header,
                stateless_body,
            })
        };
        assert_eq!(d(true, Some("2026-07-28"), true), Revision::Handshake);
        assert_eq!(d(false, Some("2026-07-28"), false), Revision::Stateless);
        assert_eq!(d(false, Some("v999.0.0"), false), Revision::Stateless);
        assert_eq!(d(false, Some("2025-11-25"), false), Revision::Handshake);
        assert_eq!(d(false, Some("2025-11-25"), true), Revision::Stateless);
        assert_eq!(d(false, None, true), Revision::Stateless);
        assert_eq!(d(false, None, false), Revision::Handshake);
        assert!(body_is_stateless(Some(McpMethod::ServerDiscover), None));
        assert!(body_is_stateless(
            Some(McpMethod::ToolsList),
            Some(&json!({ "_meta": meta() }))
        ));
        assert!(!body_is_stateless(
            Some(McpMethod::ToolsList),
            Some(&json!({ "_meta": { "progressToken": 1 } }))
        ));
        assert!(!body_is_stateless(
            Some(McpMethod::Initialize),
            Some(&json!({ "protocolVersion": "2025-11-25" }))
        ));
    }

    #[test]
    fn negotiation_echoes_known_versions_and_offers_the_latest_otherwise() {
        assert_eq!(negotiate(Some("2025-06-18")), "2025-06-18");
        assert_eq!(negotiate(Some("2099-01-01")), LATEST_HANDSHAKE_VERSION);
        assert_eq!(negotiate(Some("2026-07-28")), LATEST_HANDSHAKE_VERSION);
        assert_eq!(negotiate(None), LATEST_HANDSHAKE_VERSION);
        assert!(
            batches_allowed("2025-03-26")
                && !batches_allowed("2025-11-25")
                && !batches_allowed(STATELESS_VERSION)
        );
    }

    #[test]
    fn envelope_ladder_checks_meta_then_headers_then_version() {
        let ok = req("tools/list", json!({ "_meta": meta() }));
        assert_eq!(
            check_envelope(&ok, Some(headers("tools/list", None)))
                .unwrap()
                .version,
            STATELESS_VERSION
        );
        assert!(check_envelope(&ok, None).is_ok(), "stdio has no headers to check");

        let no_meta = req("server/discover", json!({}));
        assert_eq!(
            check_envelope(&no_meta, None).unwrap_err().code,
            jsonrpc::INVALID_PARAMS
        );
        let no_caps = req(
            "server/discover",
            json!({ "_meta": { META_PROTOCOL_VERSION: STATELESS_VERSION } }),
        );
        assert_eq!(
            check_envelope(&no_caps, None).unwrap_err().code,
            jsonrpc::INVALID_PARAMS
        );

        let mut h = headers("tools/list", None);
        h.protocol_version = None;
        assert_eq!(
            check_envelope(&ok, Some(h)).unwrap_err().code,
            jsonrpc::HEADER_MISMATCH
        );
        assert_eq!(
            check_envelope(&ok, Some(headers("prompts/list", None)))
                .unwrap_err()
                .code,
            jsonrpc::HEADER_MISMATCH
        );
        assert_eq!(
            check_envelope(&ok, Some(headers("TOOLS/LIST", None)))
                .unwrap_err()
                .code,
            jsonrpc::HEADER_MISMATCH
        );
    }

    #[test]
    fn envelope_names_must_match_and_versions_be_served() {
        let call = req(
            "tools/call",
            json!({ "name": "hub_list", "arguments": {}, "_meta": meta() }),
        );
        assert!(check_envelope(&call, Some(headers("tools/call", Some("  hub_list  ")))).is_ok());
        assert!(
            check_envelope(
                &call,
                Some(headers("tools/call", Some("=?base64?aHViX2xpc3Q=?=")))
            )
            .is_ok()
        );
        for bad in [None, Some("wrong"), Some("=?base64?aHViX2xpc3Q?=")] {
            assert_eq!(
                check_envelope(&call, Some(headers("tools/call", bad)))
                    .unwrap_err()
                    .code,
                jsonrpc::HEADER_MISMATCH,
                "{bad:?}"
            );
        }

        let future = req(
            "server/discover",
            json!({ "_meta": { META_PROTOCOL_VERSION: "v999.0.0", META_CLIENT_CAPABILITIES: {} } }),
        );
        let mut h = headers("server/discover", None);
        h.protocol_version = Some("v999.0.0");
        let e = check_envelope(&future, Some(h)).unwrap_err();
        assert_eq!(e.code, jsonrpc::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(e.data.as_ref().unwrap()["requested"], "v999.0.0");
        assert_eq!(e.data.as_ref().unwrap()["supported"][0], STATELESS_VERSION);
        // The header disagreeing with the body is a mismatch, not an unsupported version.
        assert_eq!(
            check_envelope(&future, Some(headers("server/discover", None)))
                .unwrap_err()
                .code,
            jsonrpc::HEADER_MISMATCH
        );
    }

    #[test]
    fn base64_header_values_are_strict() {
        assert_eq!(decode_header_value("plain").as_deref(), Some("plain"));
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8=?=").as_deref(),
            Some("Hello")
        );
        assert_eq!(decode_header_value("=?base64?SGVsbG8?="), None, "missing padding");
        assert_eq!(
            decode_header_value("=?base64?SGVs!!!bG8=?="),
            None,
            "bad alphabet"
        );
        assert_eq!(
            decode_header_value("=?base64?SGVsbG9=?="),
            None,
            "non-canonical bits"
        );
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8=").as_deref(),
            Some("=?base64?SGVsbG8="),
            "literal"
        );
    }
}
