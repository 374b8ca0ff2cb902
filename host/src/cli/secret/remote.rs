//! `wasmhub secret set|rm|list --hub URL`: the same commands through a running
//! hub's API (`PUT`/`DELETE /api/plugins/{plugin}/secrets/{name}`, `GET
//! /api/plugins`) with an operator token, for a hub whose embedded database it
//! holds open, or one the operator reaches only over HTTP. The hub checks the
//! caller and that the plugin declares the secret; the value travels in the
//! request body only, never in a URL or a log.

use super::{Command, read_value};
use crate::cli::hub_api;
use crate::logging::Rfc3339;
use http::Method;
use serde_json::Value;
use std::io::Write;

/// Where and as whom.
pub(in crate::cli) struct Hub<'a> {
    pub url: String,
    pub token: Option<&'a str>,
}

/// Runs `command` through the hub; the error is what to print.
pub(super) async fn execute(command: Command<'_>, hub: &Hub<'_>, max_kb: u64) -> Result<(), String> {
    match command {
        Command::Set { plugin, name } => {
            let value = read_value(plugin, name, max_kb)?;
            let body = serde_json::json!({ "value": value }).to_string();
            let path = secret_path(plugin, name);
            expect_no_content(ask(hub, Method::PUT, &path, Some(body)).await?)?;
            eprintln!(
                "set {plugin}/{name} through {}: sealed; the next call uses it",
                hub.url
            );
            Ok(())
        }
        Command::Remove { plugin, name } => {
            let path = secret_path(plugin, name);
            expect_no_content(ask(hub, Method::DELETE, &path, None).await?)?;
            eprintln!("removed {plugin}/{name} through {}", hub.url);
            Ok(())
        }
        Command::List { plugin } => {
            let (status, answer) = ask(hub, Method::GET, "/api/plugins", None).await?;
            if status != 200 {
                return Err(format!("the hub answered {status}: {}", hub_api::why(&answer)));
            }
            let mut out = std::io::stdout().lock();
            for (key, state, detail) in rows(&answer, plugin) {
                let _ = writeln!(out, "{key:<32} {state:<6} {detail}");
            }
            Ok(())
        }
    }
}

fn secret_path(plugin: &str, name: &str) -> String {
    // Both were checked against their name rules: nothing to escape.
    format!("/api/plugins/{plugin}/secrets/{name}")
}

async fn ask(
    hub: &Hub<'_>,
    method: Method,
    path: &str,
    body: Option<String>,
) -> Result<(u16, Value), String> {
    hub_api::request(method, &hub.url, path, body, hub.token)
        .await
        .map_err(|e| format!("{}: {e}", hub.url))
}

fn expect_no_content((status, answer): (u16, Value)) -> Result<(), String> {
    match status {
        204 => Ok(()),
        _ => Err(format!("the hub answered {status}: {}", hub_api::why(&answer))),
    }
}

/// `GET /api/plugins`'s declared secrets as `(PLUGIN/NAME, set|unset, detail)`
/// rows, sorted, of one plugin when `only` is given.
fn rows(answer: &Value, only: Option<&str>) -> Vec<(String, String, String)> {
    let mut rows = Vec::new();
    let plugins = answer["plugins"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for plugin in plugins {
        let Some(name) = plugin["name"].as_str() else {
            continue;
        };
        if only.is_some_and(|only| only != name) {
            continue;
        }
        let secrets = plugin["secrets"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for secret in secrets {
            let how = match secret["use"].as_str() {
                Some("inject") => {
                    let hosts: Vec<&str> = secret["hosts"]
                        .as_array()
                        .map(|h| h.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    format!("injected into {}", hosts.join(", "))
                }
                _ => "revealed to the plugin".to_string(),
            };
            let (state, detail) = match secret["source"].as_str() {
                Some("stored") => {
                    let since = secret["updated_ms"].as_u64().unwrap_or_default();
                    ("set", format!("stored {}; {how}", Rfc3339(since)))
                }
                Some("reference") => (
                    "set",
                    format!("from {}; {how}", secret["reference"].as_str().unwrap_or("?")),
                ),
                _ => ("unset", format!("declared; {how}")),
            };
            let key = format!("{name}/{}", secret["name"].as_str().unwrap_or("?"));
            rows.push((key, state.to_string(), detail));
        }
    }
    rows.sort();
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_listing_shows_where_each_declared_secret_is_never_a_value() {
        let answer = json!({"plugins": [
            {"name": "weather", "secrets": [
                {"name": "API_KEY", "use": "inject", "hosts": ["api.weatherapi.com:443"], "source": "stored", "updated_ms": 0},
                {"name": "SIGNING", "use": "reveal", "source": "unset"}]},
            {"name": "mail", "secrets": [
                {"name": "TOKEN", "use": "inject", "hosts": ["smtp.example:443"], "source": "reference", "reference": "env:MAIL_TOKEN"}]},
            {"name": "calc"}]});
        let all = rows(&answer, None);
        assert_eq!(
            all,
            vec![
                (
                    "mail/TOKEN".into(),
                    "set".into(),
                    "from env:MAIL_TOKEN; injected into smtp.example:443".into()
                ),
                (
                    "weather/API_KEY".into(),
                    "set".into(),
                    "stored 1970-01-01T00:00:00.000Z; injected into api.weatherapi.com:443".into()
                ),
                (
                    "weather/SIGNING".into(),
                    "unset".into(),
                    "declared; revealed to the plugin".into()
                ),
            ]
        );
        assert_eq!(rows(&answer, Some("mail")).len(), 1);
    }
}
