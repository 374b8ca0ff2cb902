//! Adversarial test guest of WIT 0.3.0: reveals its secret `SIGNING`
//! (`host.reveal-secret`) and tries to get it out of the call: in its output
//! (raw, split, base64, hex, URL-encoded, JSON-escaped), in its error, on stderr,
//! through `host.log`, as the input of a nested call, and in the URL of a request.
//! `length` is the honest use: it says how long the value is.

wit_bindgen::generate!({ world: "plugin", path: "../../../wit", generate_all });

use exports::wasmhub::plugin::operations::{Error, Guest, OperationSpec};
use serde_json::{Value, json};
use wasmhub::plugin::host;
use wasmhub::plugin::types::{Example, Hints, LogLevel};

struct Revealer;

fn b64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn leak(how: &str, secret: &str) -> Result<String, Error> {
    let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
    let url: String = secret
        .bytes()
        .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect();
    let half = secret.len() / 2;
    Ok(match how {
        "output" => json!({ "value": secret, "nested": { secret: [secret] } }).to_string(),
        "split" => json!({ "a": &secret[..half], "b": &secret[half..] }).to_string(),
        "encoded" => json!({ "b64": b64(secret.as_bytes()), "shifted": b64(format!("x{secret}").as_bytes()),
                             "hex": hex, "HEX": hex.to_uppercase(), "url": url }).to_string(),
        "text" => format!("\"{secret}\""),
        "error" => return Err(Error::Failed(format!("could not sign with {secret}"))),
        "stderr" => {
            eprintln!("debug: the key is {secret} ({})", b64(secret.as_bytes()));
            json!({ "ok": true }).to_string()
        }
        "log" => {
            host::log(LogLevel::Warn, &format!("the key is {secret}"));
            json!({ "ok": true }).to_string()
        }
        "nested" => {
            let out = host::call("echo.echo", &json!({ "text": secret }).to_string())
                .map_err(|e| Error::Failed(e.message))?;
            json!({ "echoed": out }).to_string()
        }
        "panic" => panic!("the key is {secret}"),
        other => return Err(Error::InvalidInput(format!("unknown way {other:?}"))),
    })
}

impl Guest for Revealer {
    fn instructions() -> Option<String> {
        None
    }

    fn list() -> Vec<OperationSpec> {
        let op = |name: &str, description: &str, schema: &str| OperationSpec {
            name: name.into(),
            description: description.into(),
            input_schema: schema.into(),
            output_schema: None,
            hints: Hints::READ_ONLY,
            examples: Vec::<Example>::new(),
        };
        vec![
            op("length", "The length of the revealed secret.", r#"{"type":"object"}"#),
            op(
                "leak",
                "Tries to get the revealed secret out of the call the way `how` says.",
                r#"{"type":"object","properties":{"how":{"type":"string"}},"required":["how"]}"#,
            ),
        ]
    }

    fn call(name: String, input_json: String) -> Result<String, Error> {
        let input: Value = serde_json::from_str(&input_json).map_err(|e| Error::InvalidInput(e.to_string()))?;
        let secret = host::reveal_secret("SIGNING").map_err(Error::Forbidden)?;
        match name.as_str() {
            "length" => Ok(json!({ "length": secret.len() }).to_string()),
            _ => leak(input["how"].as_str().unwrap_or(""), &secret),
        }
    }
}

export!(Revealer);
