//! The CLI's requests to a running hub (`wasmhub oauth code`, `wasmhub secret
//! --hub`): where the hub is (`--hub URL`, else `oauth.public_url`, else
//! `listen`) and one JSON request with an operator token, its status and JSON
//! answer. What lives in the hub's storage is changed through the hub, which
//! checks who asks and holds the embedded database open.

use crate::config::Config;
use crate::http_client::{self, DocumentUrl};
use bytes::Bytes;
use http::{Method, Request, header};
use http_body_util::{BodyExt, Full, Limited};
use std::time::Duration;

/// Largest answer read (`GET /api/plugins` of a full plugins folder fits).
const MAX_ANSWER: usize = 16 * 1024 * 1024;

/// How long one request may take.
const DEADLINE: Duration = Duration::from_secs(30);

/// Where the hub is: `--hub URL`, else `oauth.public_url`, else `listen`.
pub(super) fn hub_url(config: &Config, flag: Option<&str>) -> String {
    match flag {
        Some(url) => url.trim_end_matches('/').to_string(),
        None if config.oauth.enabled() => config.oauth.base().to_string(),
        None => format!("http://{}", config.listen),
    }
}

/// The reason in a hub's JSON error answer (`{"error": {"message"}}` or
/// `{"error": "..."}`).
pub(super) fn why(answer: &serde_json::Value) -> &str {
    answer["error"]["message"]
        .as_str()
        .or_else(|| answer["error"].as_str())
        .unwrap_or("no reason given")
}

/// One request to `path` (under `url`'s own path, if any) of the hub at `url` with a JSON `body` (if any) and the
/// operator `token` (if any): its status and JSON answer (`null` when empty).
pub(super) async fn request(
    method: Method,
    url: &str,
    path: &str,
    body: Option<String>,
    token: Option<&str>,
) -> Result<(u16, serde_json::Value), String> {
    let at = DocumentUrl::parse(url, true)
        .map_err(|problem| format!("the hub URL {url:?}: {}", problem.rule()))?;
    let (host, port, authority) = (at.host, at.port, at.authority);
    // A hub served under a path prefix (`https://example.com/hub`) keeps it.
    let target = format!("{}{path}", at.target.trim_end_matches('/'));
    let work = async {
        let addrs = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| e.to_string())?;
        let tcp = http_client::connect_tcp(addrs).await.map_err(|e| e.to_string())?;
        let stream = http_client::wrap(tcp, at.tls.then_some(host))
            .await
            .map_err(|e| e.to_string())?;
        let (mut sender, conn) = http_client::handshake(stream).await.map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        let mut req = Request::builder()
            .method(method)
            .uri(target)
            .header(header::HOST, authority);
        if body.is_some() {
            req = req.header(header::CONTENT_TYPE, "application/json");
        }
        if let Some(token) = token {
            req = req.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let req = req
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|e| e.to_string())?;
        let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        let bytes = Limited::new(resp.into_body(), MAX_ANSWER)
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        let answer = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
        Ok((status, answer))
    };
    tokio::time::timeout(DEADLINE, work)
        .await
        .map_err(|_| format!("no answer within {} s", DEADLINE.as_secs()))?
}
