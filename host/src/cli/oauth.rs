//! `wasmhub oauth code NAME`: asks a running hub for a one-time sign-in code for
//! the principal NAME (`POST /api/oauth/signin-codes`, operator tokens only) and
//! prints it. The code lives in the hub's storage (every replica accepts it), so
//! the command talks to the hub rather than to the database.

use crate::config::Config;
use crate::http_client;
use bytes::Bytes;
use http::{Request, header};
use http_body_util::{BodyExt, Full, Limited};
use std::process::ExitCode;
use std::time::Duration;

/// Largest answer read.
const MAX_ANSWER: usize = 64 * 1024;

/// Where the hub is: `--hub URL`, else `oauth.public_url`, else `listen`.
pub(super) fn hub_url(config: &Config, flag: Option<&str>) -> String {
    match flag {
        Some(url) => url.trim_end_matches('/').to_string(),
        None if config.oauth.enabled() => config.oauth.base().to_string(),
        None => format!("http://{}", config.listen),
    }
}

/// Prints a sign-in code for `principal` from the hub at `url`, authenticated with
/// the operator token in `token` (if any).
pub(super) fn code(url: &str, principal: &str, token: Option<&str>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("wasmhub oauth: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let body = serde_json::json!({ "principal": principal }).to_string();
    match runtime.block_on(post(url, "/api/oauth/signin-codes", body, token)) {
        Ok((201, answer)) => {
            let code = answer["code"].as_str().unwrap_or_default();
            eprintln!(
                "a sign-in code for {principal}, valid once for {} s: give it to the person signing in",
                answer["expires_in"]
            );
            println!("{code}");
            ExitCode::SUCCESS
        }
        Ok((status, answer)) => {
            let why = answer["error"]["message"]
                .as_str()
                .or_else(|| answer["error"].as_str())
                .unwrap_or("no reason given");
            eprintln!("wasmhub oauth: the hub answered {status}: {why}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("wasmhub oauth: {url}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One JSON POST, its status and JSON answer.
async fn post(
    url: &str,
    path: &str,
    body: String,
    token: Option<&str>,
) -> Result<(u16, serde_json::Value), String> {
    let (https, rest) = match url.split_once("://") {
        Some(("https", rest)) => (true, rest),
        Some(("http", rest)) => (false, rest),
        _ => return Err("the hub URL must start with http:// or https://".into()),
    };
    let authority = rest.split('/').next().unwrap_or(rest);
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (h, tail) = v6
                .split_once(']')
                .ok_or_else(|| format!("bad IPv6 address in {url}"))?;
            (h, tail.strip_prefix(':'))
        }
        None => match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        },
    };
    let port = match port {
        Some(p) => p.parse::<u16>().map_err(|_| format!("bad port in {url}"))?,
        None if https => 443,
        None => 80,
    };
    let work = async {
        let addrs = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| e.to_string())?;
        let tcp = http_client::connect_tcp(addrs).await.map_err(|e| e.to_string())?;
        let stream = http_client::wrap(tcp, https.then_some(host))
            .await
            .map_err(|e| e.to_string())?;
        let (mut sender, conn) = http_client::handshake(stream).await.map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        let mut req = Request::post(path)
            .header(header::HOST, authority)
            .header(header::CONTENT_TYPE, "application/json");
        if let Some(token) = token {
            req = req.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let req = req
            .body(Full::new(Bytes::from(body)))
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
    tokio::time::timeout(Duration::from_secs(30), work)
        .await
        .map_err(|_| "no answer within 30 s".to_string())?
}
