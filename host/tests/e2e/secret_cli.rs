//! `wasmhub secret keygen|set|list|rm` through the real binary on a data folder:
//! the value comes from stdin only, is stored sealed (no file of the data folder
//! holds it), `list` shows names and set/unset and never a value.

use crate::support::runtime::*;
use std::io::Write;
use std::process::{Command, Output, Stdio};

fn wasmhub(s: &Scratch, args: &[&str], stdin: Option<&str>) -> Output {
    let key = s.path("secrets.key");
    let mut child = Command::new(env!("CARGO_BIN_EXE_wasmhub"))
        .args(args)
        .arg("--data")
        .arg(s.path("data"))
        .arg("--plugins")
        .arg(s.path("plugins"))
        .arg("--set")
        .arg(format!("secrets.key_file={:?}", key.display().to_string()))
        .current_dir(&s.0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every byte under `dir`, file by file.
fn files(dir: &std::path::Path, into: &mut Vec<(std::path::PathBuf, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, into);
        } else {
            into.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
}

#[test]
fn set_list_and_remove_keep_values_sealed_and_unshown() {
    let s = Scratch::new("secret-cli");
    std::fs::create_dir_all(s.path("plugins")).unwrap();
    std::fs::write(
        s.path("plugins/weather.toml"),
        "[network]\nallow = [\"api.example.com\"]\n[secrets.API_KEY]\ndescription = \"key\"\n\
         inject = { host = \"api.example.com\", header = \"Authorization\", format = \"Bearer {}\" }\n\
         [secrets.SIGNING]\nreveal = true\n",
    )
    .unwrap();

    // No key yet: a clear error naming the keys to set.
    let out = wasmhub(&s, &["secret", "set", "weather", "API_KEY"], Some("v"));
    let (_, err) = text(&out);
    assert!(!out.status.success());
    assert!(
        err.contains("secrets.key_file") && err.contains("keygen"),
        "{err}"
    );

    let key = s.path("secrets.key");
    let out = wasmhub(&s, &["secret", "keygen", key.to_str().unwrap()], None);
    assert!(out.status.success(), "{:?}", text(&out));
    // Never overwritten.
    assert!(
        !wasmhub(&s, &["secret", "keygen", key.to_str().unwrap()], None)
            .status
            .success()
    );

    // A value on the command line is refused.
    let out = wasmhub(
        &s,
        &["secret", "set", "weather", "API_KEY", "plaintext-arg"],
        None,
    );
    assert!(!out.status.success());
    assert!(text(&out).1.contains("stdin"), "{:?}", text(&out));

    let out = wasmhub(
        &s,
        &["secret", "set", "weather", "API_KEY"],
        Some("sk-live-0123456789\n"),
    );
    assert!(out.status.success(), "{:?}", text(&out));
    let out = wasmhub(&s, &["secret", "list"], None);
    let (list, _) = text(&out);
    assert!(out.status.success());
    assert!(
        list.contains("weather/API_KEY") && list.contains(" set "),
        "{list}"
    );
    assert!(
        list.contains("weather/SIGNING") && list.contains("unset"),
        "{list}"
    );
    assert!(!list.contains("sk-live"), "{list}");

    let mut all = Vec::new();
    files(&s.path("data"), &mut all);
    assert!(!all.is_empty());
    for (path, bytes) in &all {
        assert!(
            !bytes
                .windows(b"sk-live-0123456789".len())
                .any(|w| w == b"sk-live-0123456789"),
            "{} holds the plaintext",
            path.display()
        );
    }

    let out = wasmhub(&s, &["secret", "rm", "weather", "API_KEY"], None);
    assert!(out.status.success(), "{:?}", text(&out));
    let out = wasmhub(&s, &["secret", "rm", "weather", "API_KEY"], None);
    assert!(text(&out).1.contains("not stored"), "{:?}", text(&out));
    let (list, _) = text(&wasmhub(&s, &["secret", "list", "weather"], None));
    assert!(
        list.contains("weather/API_KEY") && list.contains("unset"),
        "{list}"
    );
}
