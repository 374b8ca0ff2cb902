//! `wasmhub oauth code NAME`: asks a running hub for a one-time sign-in code for
//! the principal NAME (`POST /api/oauth/signin-codes`, operator tokens only) and
//! prints it. The code lives in the hub's storage (every replica accepts it), so
//! the command talks to the hub rather than to the database.

use super::hub_api;
use http::Method;
use std::process::ExitCode;

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
    let asked = hub_api::request(Method::POST, url, "/api/oauth/signin-codes", Some(body), token);
    match runtime.block_on(asked) {
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
            eprintln!(
                "wasmhub oauth: the hub answered {status}: {}",
                hub_api::why(&answer)
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("wasmhub oauth: {url}: {e}");
            ExitCode::FAILURE
        }
    }
}
