//! The REST API of the hub: `POST /api/hub/{list,search,schema,call}` (body = the
//! meta-tool's input), `GET /api/plugins`, `GET /api/calls?limit=N&principal=P`,
//! `GET /api/accounting?since=ID|RFC3339&limit=N&principal=P` (records are the
//! caller's own; an operator sees everyone's, or `P`'s).
//!
//! Meta-tool errors become 400/403/404 with the `{error: {code, message, ...}}`
//! body; per-call failures inside a `hub_call` batch are part of a 200 answer.
//! A client that disconnects cancels the invocation's token (see `watched`), so
//! calls still running (and their nested calls) stop.

use super::App;
use super::limit::Surface;
use super::query;
use super::respond::{self, BodyError, Resp};
use super::watched;
use crate::hub::{CallContext, Caller, MetaToolKind, MetaToolRequest, Since, ToolError};
use http::{Request, StatusCode};
use hyper::body::Incoming;
use serde_json::json;

/// Default and largest `limit` of `GET /api/calls`.
const CALLS_DEFAULT_LIMIT: usize = 100;
const CALLS_MAX_LIMIT: usize = 1000;

/// HTTP status of a meta-tool error.
pub(crate) fn tool_error_status(e: &ToolError) -> StatusCode {
    match e {
        ToolError::UnknownTool { .. } | ToolError::NotFound { .. } => StatusCode::NOT_FOUND,
        ToolError::Forbidden { .. } => StatusCode::FORBIDDEN,
        ToolError::InvalidArguments { .. } | ToolError::BatchTooLarge { .. } => StatusCode::BAD_REQUEST,
        // Nobody reads it (the client left), but the log shows 499 like nginx does.
        ToolError::Cancelled => StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST),
    }
}

/// `POST /api/hub/{list,search,schema,call}`: meta-tool `kind` with the body as its
/// arguments.
pub(crate) async fn meta_tool(app: &App, req: Request<Incoming>, caller: Caller, kind: MetaToolKind) -> Resp {
    let body = match app.body_parser().read(req.into_body()).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let request = match read_request(app, &caller, kind, body).await {
        Ok(request) => request,
        Err(e) => return e.into_response(),
    };
    let ctx = CallContext::new(caller);
    let cancel = ctx.cancel.clone();
    let hub = app.hub.clone();
    let work = async move {
        let answer = match request {
            Ok(request) => hub.invoke(request, ctx).await,
            Err(e) => Err(e),
        };
        match answer {
            Ok(output) => (StatusCode::OK, output),
            Err(e) => (tool_error_status(&e), json!({ "error": e.to_json() })),
        }
    };
    app.limits.serve(Surface::Rest, watched::json(work, cancel)).await
}

/// The body as meta-tool `kind`'s request (an empty body: no arguments, as for
/// `hub_list`). Parsed and typed by `surfaces::parse` (a large body off the async
/// workers): typing rebuilds every object of the input.
async fn read_request(
    app: &App,
    caller: &Caller,
    kind: MetaToolKind,
    body: bytes::Bytes,
) -> Result<Result<MetaToolRequest, ToolError>, BodyError> {
    let read = move |body: &[u8]| -> Result<_, serde_json::Error> {
        let args = match body.iter().all(u8::is_ascii_whitespace) {
            true => json!({}),
            false => serde_json::from_slice(body)?,
        };
        Ok(MetaToolRequest::new(kind, args))
    };
    app.body_parser()
        .parse(caller.name(), body, read)
        .await?
        .map_err(BodyError::Json)
}

/// `GET /api/plugins`: every plugin with its state, reason, operations, digest,
/// capabilities, and the secrets (where each value is, never a value) and
/// configuration its manifest declares.
pub(crate) async fn plugins(app: &App) -> Resp {
    match app.hub.plugins_with_needs().await {
        Ok(plugins) => respond::json(StatusCode::OK, &json!({ "plugins": plugins })),
        Err(e) => respond::error(StatusCode::INTERNAL_SERVER_ERROR, "storage_error", e.to_string()),
    }
}

/// `GET /api/mcp-servers`: every configured MCP server with its transport, target
/// (the command or the URL, never arguments, environment or headers), state,
/// reason, operations and notes.
pub(crate) fn mcp_servers(app: &App) -> Resp {
    respond::json(StatusCode::OK, &json!({ "servers": app.hub.mcp_servers() }))
}

/// `GET /api/calls?limit=N&principal=P`: the newest call records the caller may
/// see (its own; an operator's: everyone's, or `P`'s), newest first.
pub(crate) async fn calls(app: &App, req: &Request<Incoming>, caller: &Caller) -> Resp {
    let limit = match query_limit(req.uri().query()) {
        Ok(l) => l,
        Err(e) => return respond::error(StatusCode::BAD_REQUEST, "invalid_input", e.to_string()),
    };
    let visible = match query::visible(caller, req.uri().query()) {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    // Reading waits for the audit writer: keep it off the async workers.
    let hub = app.hub.clone();
    match tokio::task::spawn_blocking(move || hub.calls(limit, &visible)).await {
        Ok(Ok(records)) => respond::json(StatusCode::OK, &json!({ "calls": records })),
        Ok(Err(e)) => respond::error(StatusCode::INTERNAL_SERVER_ERROR, "storage_error", e.to_string()),
        Err(e) => respond::error(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
    }
}

/// `GET /api/accounting?since=…&limit=N&principal=P`: the accounting records the
/// caller may see (as for `calls`) after `since` (a record id, exclusive, or an
/// RFC 3339 time, inclusive; none: the oldest kept), oldest first, and `next`, the
/// `since` of the following page.
pub(crate) async fn accounting(app: &App, req: &Request<Incoming>, caller: &Caller) -> Resp {
    let query = req.uri().query();
    let limit = match query_limit(query) {
        Ok(l) => l,
        Err(e) => return respond::error(StatusCode::BAD_REQUEST, "invalid_input", e.to_string()),
    };
    let since = match query_since(query) {
        Ok(s) => s,
        Err(e) => return respond::error(StatusCode::BAD_REQUEST, "invalid_input", e.to_string()),
    };
    let visible = match query::visible(caller, query) {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    // Reading waits for the accounting writer: keep it off the async workers.
    let hub = app.hub.clone();
    match tokio::task::spawn_blocking(move || hub.accounting().page(since, limit, &visible)).await {
        Ok(Ok(page)) => respond::json(StatusCode::OK, &page),
        Ok(Err(e)) => respond::error(StatusCode::INTERNAL_SERVER_ERROR, "storage_error", e.to_string()),
        Err(e) => respond::error(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
    }
}

/// A `since` query value that is neither a record id nor an RFC 3339 time.
#[derive(Debug, PartialEq)]
struct BadSince(String);

impl std::fmt::Display for BadSince {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "since must be a record id (an integer: records after it) or an RFC 3339 time like \
             2026-11-24T14:30:00Z (records from then on), got {:?}",
            self.0
        )
    }
}

impl std::error::Error for BadSince {}

fn query_since(query: Option<&str>) -> Result<Since, BadSince> {
    let Some(raw) = query::value(query, "since") else {
        return Ok(Since::Start);
    };
    // `+` in a query is a space; a time's offset must be sent as %2B.
    let value = raw
        .replace("%3A", ":")
        .replace("%3a", ":")
        .replace("%2B", "+")
        .replace("%2b", "+");
    if let Ok(id) = value.parse::<u64>() {
        return Ok(Since::Id(id));
    }
    crate::clock::parse_rfc3339(&value)
        .map(Since::Time)
        .ok_or_else(|| BadSince(raw.to_string()))
}

/// A `limit` query value that is not an integer from 1 to [`CALLS_MAX_LIMIT`].
#[derive(Debug, PartialEq)]
struct BadLimit(String);

impl std::fmt::Display for BadLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "limit must be an integer from 1 to {CALLS_MAX_LIMIT}, got {:?}",
            self.0
        )
    }
}

impl std::error::Error for BadLimit {}

fn query_limit(query: Option<&str>) -> Result<usize, BadLimit> {
    match query::value(query, "limit") {
        None => Ok(CALLS_DEFAULT_LIMIT),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=CALLS_MAX_LIMIT).contains(&n) => Ok(n),
            _ => Err(BadLimit(v.to_string())),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_is_parsed_and_bounded() {
        assert_eq!(query_limit(None), Ok(CALLS_DEFAULT_LIMIT));
        assert_eq!(query_limit(Some("a=1&limit=5")), Ok(5));
        assert!(query_limit(Some("limit=0")).is_err());
        assert!(
            query_limit(Some("limit=5000"))
                .unwrap_err()
                .to_string()
                .contains("1 to 1000")
        );
        assert!(query_limit(Some("limit=x")).is_err());
    }

    #[test]
    fn since_is_a_record_id_or_an_rfc3339_time() {
        assert_eq!(query_since(None), Ok(Since::Start));
        assert_eq!(query_since(Some("limit=5&since=42")), Ok(Since::Id(42)));
        assert_eq!(
            query_since(Some("since=1970-01-01T00%3A00%3A01%2B00:00")),
            Ok(Since::Time(1000))
        );
        let e = query_since(Some("since=yesterday")).unwrap_err();
        assert!(e.to_string().contains("RFC 3339"), "{e}");
    }

    #[test]
    fn tool_errors_map_to_statuses() {
        assert_eq!(
            tool_error_status(&ToolError::Forbidden {
                tool: "a.b".into(),
                caller: "c".into()
            }),
            StatusCode::FORBIDDEN
        );
        assert_eq!(
            tool_error_status(&ToolError::NotFound {
                tool: "a.b".into(),
                suggestions: vec![]
            }),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            tool_error_status(&ToolError::BatchTooLarge { count: 2, limit: 1 }),
            StatusCode::BAD_REQUEST
        );
    }
}
