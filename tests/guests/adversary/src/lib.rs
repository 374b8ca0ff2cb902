//! Test guest: one operation per way a plugin can misbehave (spin, allocate, recurse,
//! flood stdout, panic, return too much, sleep, touch files/env it was not granted),
//! plus cheap well-behaved operations (echo, noop) for benchmarks and nested calls.

wit_bindgen::generate!({ world: "plugin", path: "../../../wit/0.1.0" });

use exports::wasmhub::plugin::operations::{Error, Guest, OperationSpec};
use serde_json::{Value, json};
use std::io::Write;
use wasmhub::plugin::host;
use wasmhub::plugin::types::{Hints, LogLevel};

struct Adversary;

const OPS: &[(&str, &str)] = &[
    ("echo", "Returns its input unchanged."),
    ("noop", "Returns an empty object."),
    ("spin", "Loops forever."),
    ("memory_bomb", "Allocates memory until it fails."),
    ("recurse", "Recurses without bound."),
    ("flood_stdout", "Writes 100 MB to stdout."),
    ("panic", "Panics."),
    ("huge_output", "Returns a string of `bytes` bytes."),
    ("slow", "Sleeps `ms` milliseconds, then answers."),
    ("print", "Writes `text` to stdout and stderr, then answers."),
    ("read_file", "Reads the file at `path`."),
    ("write_file", "Writes `text` to the file at `path`."),
    ("env", "Reads environment variable `name`."),
    ("log", "Logs `message` through host.log."),
    ("nested", "Calls `tool` with `input` through host.call."),
    (
        "fanout",
        "Calls `tool` with `input` `times` times through host.call; counts what failed how.",
    ),
    ("fail", "Fails with the error variant named by `kind`."),
];

fn arg<'a>(input: &'a Value, key: &str) -> &'a Value {
    input.get(key).unwrap_or(&Value::Null)
}

#[inline(never)]
#[allow(unconditional_recursion)]
fn recurse(depth: u64, pad: &mut [u8; 256]) -> u64 {
    pad[(depth % 256) as usize] = depth as u8;
    let mut next = *pad;
    std::hint::black_box(&mut next);
    recurse(depth + 1, &mut next) + next[0] as u64
}

impl Guest for Adversary {
    fn list() -> Vec<OperationSpec> {
        OPS.iter()
            .map(|(name, description)| OperationSpec {
                name: name.to_string(),
                description: description.to_string(),
                input_schema: r#"{"type":"object"}"#.to_string(),
                output_schema: None,
                hints: if *name == "echo" || *name == "noop" {
                    Hints::READ_ONLY | Hints::IDEMPOTENT
                } else {
                    Hints::empty()
                },
            })
            .collect()
    }

    fn call(name: String, input_json: String) -> Result<String, Error> {
        let input: Value =
            serde_json::from_str(&input_json).map_err(|e| Error::InvalidInput(e.to_string()))?;
        match name.as_str() {
            "echo" => Ok(input_json),
            "noop" => Ok("{}".into()),
            "spin" => {
                let mut x: u64 = 0;
                loop {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
            "memory_bomb" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "recurse" => Ok(recurse(0, &mut [0u8; 256]).to_string()),
            "flood_stdout" => {
                let chunk = vec![b'x'; 64 * 1024];
                let mut out = std::io::stdout();
                for _ in 0..1600 {
                    out.write_all(&chunk).map_err(|e| Error::Failed(e.to_string()))?;
                }
                out.flush().map_err(|e| Error::Failed(e.to_string()))?;
                Ok("{}".into())
            }
            "panic" => panic!("deliberate panic in the adversary guest"),
            "huge_output" => {
                let bytes = arg(&input, "bytes").as_u64().unwrap_or(10 << 20) as usize;
                Ok(format!("\"{}\"", "a".repeat(bytes.saturating_sub(2))))
            }
            "slow" => {
                let ms = arg(&input, "ms").as_u64().unwrap_or(100);
                std::thread::sleep(std::time::Duration::from_millis(ms));
                Ok(json!({ "slept_ms": ms }).to_string())
            }
            "print" => {
                let text = arg(&input, "text").as_str().unwrap_or("");
                println!("out: {text}");
                eprintln!("err: {text}");
                Ok("{}".into())
            }
            "read_file" => {
                let path = arg(&input, "path").as_str().unwrap_or("");
                std::fs::read_to_string(path)
                    .map(|text| json!({ "text": text }).to_string())
                    .map_err(|e| Error::Forbidden(format!("{path}: {e}")))
            }
            "write_file" => {
                let path = arg(&input, "path").as_str().unwrap_or("");
                let text = arg(&input, "text").as_str().unwrap_or("");
                std::fs::write(path, text)
                    .map(|()| "{}".to_string())
                    .map_err(|e| Error::Forbidden(format!("{path}: {e}")))
            }
            "env" => {
                let name = arg(&input, "name").as_str().unwrap_or("");
                Ok(json!({ "value": std::env::var(name).ok() }).to_string())
            }
            "log" => {
                host::log(LogLevel::Info, arg(&input, "message").as_str().unwrap_or(""));
                Ok("{}".into())
            }
            "nested" => {
                let tool = arg(&input, "tool").as_str().unwrap_or("");
                let inner = arg(&input, "input").to_string();
                match host::call(tool, &inner) {
                    Ok(out) => Ok(json!({ "ok": serde_json::from_str::<Value>(&out).unwrap_or(Value::Null) }).to_string()),
                    Err(e) => Ok(json!({ "error": format!("{:?}", e.code), "message": e.message }).to_string()),
                }
            }
            "fanout" => {
                let tool = arg(&input, "tool").as_str().unwrap_or("");
                let inner = arg(&input, "input").to_string();
                let (mut ok, mut first_error) = (0u64, Value::Null);
                for _ in 0..arg(&input, "times").as_u64().unwrap_or(1) {
                    match host::call(tool, &inner) {
                        Ok(_) => ok += 1,
                        Err(e) if first_error.is_null() => {
                            first_error = json!({ "error": format!("{:?}", e.code), "message": e.message });
                        }
                        Err(_) => {}
                    }
                }
                Ok(json!({ "ok": ok, "first_error": first_error }).to_string())
            }
            "fail" => {
                let msg = "deliberate failure".to_string();
                Err(match arg(&input, "kind").as_str().unwrap_or("failed") {
                    "invalid_input" => Error::InvalidInput(msg),
                    "not_found" => Error::NotFound(msg),
                    "forbidden" => Error::Forbidden(msg),
                    _ => Error::Failed(msg),
                })
            }
            other => Err(Error::NotFound(format!("no operation {other}"))),
        }
    }
}

export!(Adversary);
