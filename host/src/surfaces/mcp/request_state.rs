//! The integrity-protected `requestState` of a 2026-07-28 `input_required` answer.
//!
//! The stateless revision asks the client for input by answering a `tools/call`
//! with `resultType: "input_required"` and an opaque `requestState` the client
//! echoes on its retry. The hub keeps nothing between the two rounds, so the state
//! itself proves that this server asked: it is `v1.<payload>.<tag>`, the payload
//! (hex of `{"c": caller, "d": request digest, "e": expiry ms}`) and an HMAC-SHA256
//! tag over it. A retry is accepted only when the tag verifies, the caller is the
//! same token, the request (tool name and arguments) is the same, and the state
//! has not expired (`server.mcp_approval_secs`).
//!
//! The key comes from the MCP session store (`store`), so every replica of one
//! store checks the states of the others: with PostgreSQL it is created once in
//! the database and read by every replica when it starts, so a state is good on
//! any replica and across restarts until it expires; with the embedded backend
//! (one process) it is drawn at random when the process starts, so a restart
//! rejects older states (the client starts the call over).

use ring::{digest, hmac, rand};
use serde_json::{Map, Value, json};
use std::time::Duration;

/// Why a `requestState` was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StateError {
    /// Not a state this server issued, or altered since (also, with the embedded
    /// backend: issued by another process, or before a restart).
    Forged,
    /// Issued for another token.
    OtherCaller,
    /// Issued for another tool call (tool name or arguments differ).
    OtherRequest,
    /// Older than its lifetime.
    Expired,
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StateError::Forged => {
                "requestState was not issued by this server or was altered (with the sled store a state is \
                 good only on the process that issued it): call the tool again without inputResponses and \
                 requestState"
            }
            StateError::OtherCaller => {
                "requestState was issued to another caller: call the tool again without inputResponses and \
                 requestState"
            }
            StateError::OtherRequest => {
                "requestState was issued for another tool call (the tool name or arguments differ): retry \
                 with exactly the same name and arguments, or call again without requestState"
            }
            StateError::Expired => {
                "requestState has expired (server.mcp_approval_secs): call the tool again without \
                 inputResponses and requestState"
            }
        })
    }
}

impl std::error::Error for StateError {}

/// Issues and checks request states with one key and lifetime.
pub(crate) struct RequestStates {
    key: hmac::Key,
    lifetime: Duration,
}

impl RequestStates {
    /// A fresh random key; states live for `lifetime`.
    pub(crate) fn new(lifetime: Duration) -> RequestStates {
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &rand::SystemRandom::new())
            .expect("the system random generator works");
        RequestStates { key, lifetime }
    }

    /// States signed with `key` (shared by the replicas), living for `lifetime`.
    pub(crate) fn with_key(key: &[u8], lifetime: Duration) -> RequestStates {
        RequestStates {
            key: hmac::Key::new(hmac::HMAC_SHA256, key),
            lifetime,
        }
    }

    /// How long an issued state stays good.
    pub(crate) fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// A state for `caller`'s call of `tool` with `arguments`, issued at `now_ms`.
    pub(crate) fn issue(&self, caller: &str, tool: &str, arguments: &Value, now_ms: u64) -> String {
        let expires = now_ms.saturating_add(self.lifetime.as_millis() as u64);
        let payload = json!({ "c": caller, "d": request_digest(tool, arguments), "e": expires }).to_string();
        let payload = hex(payload.as_bytes());
        let tag = hmac::sign(&self.key, payload.as_bytes());
        format!("v1.{payload}.{}", hex(tag.as_ref()))
    }

    /// Checks `state` for `caller`'s call of `tool` with `arguments` at `now_ms`.
    pub(crate) fn verify(
        &self,
        state: &str,
        caller: &str,
        tool: &str,
        arguments: &Value,
        now_ms: u64,
    ) -> Result<(), StateError> {
        let mut parts = state.split('.');
        let (Some("v1"), Some(payload), Some(tag), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(StateError::Forged);
        };
        let tag = unhex(tag).ok_or(StateError::Forged)?;
        hmac::verify(&self.key, payload.as_bytes(), &tag).map_err(|_| StateError::Forged)?;
        // Signed by us, so well formed; still read it defensively.
        let claims: Value = unhex(payload)
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or(StateError::Forged)?;
        if claims["c"].as_str() != Some(caller) {
            return Err(StateError::OtherCaller);
        }
        if claims["d"].as_str() != Some(request_digest(tool, arguments).as_str()) {
            return Err(StateError::OtherRequest);
        }
        match claims["e"].as_u64() {
            Some(expires) if now_ms < expires => Ok(()),
            Some(_) => Err(StateError::Expired),
            None => Err(StateError::Forged),
        }
    }
}

/// SHA-256 of the tool name and the arguments in a canonical form (object keys
/// sorted), so a client re-serializing the same arguments matches.
fn request_digest(tool: &str, arguments: &Value) -> String {
    let mut ctx = digest::Context::new(&digest::SHA256);
    ctx.update(tool.as_bytes());
    ctx.update(b"\n");
    ctx.update(canonical(arguments).to_string().as_bytes());
    hex(ctx.finish().as_ref())
}

fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(obj) => {
            let mut keys: Vec<&String> = obj.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for k in keys {
                out.insert(k.clone(), canonical(&obj[k]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000_000;

    fn states() -> RequestStates {
        RequestStates::new(Duration::from_secs(60))
    }

    fn args() -> Value {
        json!({"calls": [{"tool": "examples.wipe", "input": {"all": true, "scope": "x"}}]})
    }

    #[test]
    fn replicas_sharing_the_stored_key_accept_each_others_states() {
        let key = [7u8; 32];
        let (a, b) = (
            RequestStates::with_key(&key, Duration::from_secs(60)),
            RequestStates::with_key(&key, Duration::from_secs(60)),
        );
        let state = a.issue("ci", "hub_call", &args(), NOW);
        assert_eq!(b.verify(&state, "ci", "hub_call", &args(), NOW), Ok(()));
        let other = RequestStates::with_key(&[8u8; 32], Duration::from_secs(60));
        assert_eq!(
            other.verify(&state, "ci", "hub_call", &args(), NOW),
            Err(StateError::Forged)
        );
    }

    #[test]
    fn a_state_verifies_for_its_caller_and_request_until_it_expires() {
        let s = states();
        let state = s.issue("ci", "hub_call", &args(), NOW);
        assert!(state.starts_with("v1."));
        assert_eq!(s.verify(&state, "ci", "hub_call", &args(), NOW + 1_000), Ok(()));
        // The same arguments with their keys in another order are the same request.
        let reordered: Value =
            serde_json::from_str(r#"{"calls":[{"input":{"scope":"x","all":true},"tool":"examples.wipe"}]}"#)
                .unwrap();
        assert_eq!(s.verify(&state, "ci", "hub_call", &reordered, NOW), Ok(()));
        assert_eq!(
            s.verify(&state, "ci", "hub_call", &args(), NOW + 60_000),
            Err(StateError::Expired)
        );
    }

    #[test]
    fn other_callers_requests_and_tampered_or_foreign_states_are_refused() {
        let s = states();
        let state = s.issue("ci", "hub_call", &args(), NOW);
        assert_eq!(
            s.verify(&state, "other", "hub_call", &args(), NOW),
            Err(StateError::OtherCaller)
        );
        let other_args = json!({"calls": [{"tool": "examples.wipe", "input": {"all": false}}]});
        assert_eq!(
            s.verify(&state, "ci", "hub_call", &other_args, NOW),
            Err(StateError::OtherRequest)
        );
        assert_eq!(
            s.verify(&state, "ci", "hub_list", &args(), NOW),
            Err(StateError::OtherRequest)
        );
        // Flip one character of the payload, then of the tag.
        for at in [5, state.len() - 3] {
            let mut bytes = state.clone().into_bytes();
            bytes[at] = if bytes[at] == b'0' { b'1' } else { b'0' };
            let tampered = String::from_utf8(bytes).unwrap();
            assert_eq!(
                s.verify(&tampered, "ci", "hub_call", &args(), NOW),
                Err(StateError::Forged),
                "{at}"
            );
        }
        // A payload re-signed with another key (another process) or rewritten to
        // another caller without a valid tag.
        let foreign = states().issue("ci", "hub_call", &args(), NOW);
        assert_eq!(
            s.verify(&foreign, "ci", "hub_call", &args(), NOW),
            Err(StateError::Forged)
        );
        let payload = hex(
            json!({"c": "ci", "d": request_digest("hub_call", &args()), "e": u64::MAX})
                .to_string()
                .as_bytes(),
        );
        let tag = state.rsplit('.').next().unwrap();
        assert_eq!(
            s.verify(&format!("v1.{payload}.{tag}"), "ci", "hub_call", &args(), NOW),
            Err(StateError::Forged)
        );
        for garbage in [
            "",
            "v1",
            "v1..",
            "v2.aa.bb",
            "v1.zz.zz",
            "v1.aa.bb.cc",
            "v1.abc.de",
        ] {
            assert_eq!(
                s.verify(garbage, "ci", "hub_call", &args(), NOW),
                Err(StateError::Forged),
                "{garbage:?}"
            );
        }
    }
}
