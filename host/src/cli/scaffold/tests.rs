//! Scaffolding for every language: names, layout, no overwrite, I/O errors, and
//! that what the binary embeds is what the SDKs in this repository hold.

use super::*;
use crate::test_dir::TempDir;

/// A fresh directory under the system temp dir, removed when dropped.
fn temp_dir(tag: &str) -> TempDir {
    TempDir::new(&format!("wasmhub-scaffold-{tag}"))
}

#[test]
fn names_follow_the_plugin_rule() {
    for good in ["a", "weather", "my-plugin", "x_1", &"a".repeat(64)] {
        assert!(validate_name(good).is_ok(), "{good}");
    }
    for bad in [
        "",
        "Weather",
        "1x",
        "-x",
        "_x",
        "a.b",
        "a b",
        "ü",
        "fn",
        "test",
        "serde",
        &"a".repeat(65),
    ] {
        let err = validate_name(bad).unwrap_err();
        assert!(matches!(err, ScaffoldError::InvalidName { .. }), "{bad:?}");
        assert!(
            err.to_string()
                .starts_with(&format!("invalid plugin name `{bad}`"))
        );
    }
}

/// The files of `name`'s project, relative to its root, in writing order.
fn written(tmp: &TempDir, name: &str, lang: Lang) -> (PathBuf, Vec<String>) {
    let done = scaffold(name, tmp.path(), lang).unwrap();
    let rel = done
        .files
        .iter()
        .map(|f| f.strip_prefix(&done.root).unwrap().to_string_lossy().into_owned())
        .collect();
    (done.root, rel)
}

#[test]
fn writes_a_standalone_rust_crate_with_the_sdk_vendored() {
    let tmp = temp_dir("rust");
    let (root, files) = written(&tmp, "my-tool", Lang::Rust);
    for f in [
        "Cargo.toml",
        "src/lib.rs",
        "README.md",
        ".gitignore",
        "wasmhub-guest/Cargo.toml",
    ] {
        assert!(files.iter().any(|w| w == f), "{f} in {files:?}");
    }
    assert!(files.iter().any(|w| w == "wasmhub-guest/wit/plugin.wit"));
    assert!(
        files
            .iter()
            .any(|w| w == "wasmhub-guest/wit/deps/config/store.wit")
    );
    // The manifest shows one injected secret and one configuration key, and is valid.
    let manifest = root.join("my-tool.toml");
    let parsed = crate::runtime::Manifest::load(&manifest).unwrap();
    assert_eq!(parsed.secrets[0].name, "API_KEY");
    assert_eq!(parsed.config[0].name, "separator");
    let cargo = fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(cargo.contains("name = \"my-tool\""));
    assert!(cargo.contains("wasmhub-guest = { path = \"wasmhub-guest\" }"));
    assert!(cargo.contains("\n[workspace]\n"), "its own workspace table");
    assert!(cargo.contains("crate-type = [\"cdylib\", \"rlib\"]"));
    let sdk = fs::read_to_string(root.join("wasmhub-guest/Cargo.toml")).unwrap();
    assert!(
        !sdk.contains("workspace"),
        "nothing inherited from our workspace:\n{sdk}"
    );
    assert!(
        sdk.contains(&format!("version = \"{}\"", env!("CARGO_PKG_VERSION"))),
        "{sdk}"
    );
    assert!(sdk.contains("edition = \"2024\""), "{sdk}");
    let lib = fs::read_to_string(root.join("src/lib.rs")).unwrap();
    assert!(lib.contains("wasmhub_guest::export_plugin!"));
    let readme = fs::read_to_string(root.join("README.md")).unwrap();
    assert!(readme.contains("cargo build --release --target wasm32-wasip2"));
    assert!(
        readme.contains("release/my_tool.wasm PLUGINS_DIR/my-tool.wasm"),
        "artifact name vs plugin name"
    );
    assert!(!readme.contains("{{"), "every placeholder filled");
    assert_eq!(fs::read_to_string(root.join(".gitignore")).unwrap(), "/target\n");
}

#[test]
fn writes_a_python_project_with_the_sdk_and_the_wit() {
    let tmp = temp_dir("python");
    let (root, files) = written(&tmp, "my-tool", Lang::Python);
    for f in [
        "app.py",
        "build.py",
        "test_app.py",
        "wasmhub_plugin/__init__.py",
        "wit/plugin.wit",
        "wit/deps/config/store.wit",
    ] {
        assert!(files.iter().any(|w| w == f), "{f} in {files:?}");
    }
    let wit = fs::read_to_string(root.join("wit/plugin.wit")).unwrap();
    assert!(wit.contains("package wasmhub:plugin@0.3.0;"));
    assert!(wit.contains("import wasi:config/store@0.2.0-draft;"));
    for f in &files {
        let text = fs::read_to_string(root.join(f)).unwrap();
        assert!(!text.contains("{{name"), "{f} still has a placeholder");
    }
}

#[test]
fn writes_a_js_project_with_the_sdk_and_the_wit() {
    let tmp = temp_dir("js");
    let (root, files) = written(&tmp, "my-tool", Lang::Js);
    for f in [
        "package.json",
        "plugin.js",
        "wit/plugin.wit",
        "wit/deps/config/store.wit",
    ] {
        assert!(files.iter().any(|w| w == f), "{f} in {files:?}");
    }
    assert!(
        files.iter().any(|w| w.starts_with("wasmhub-plugin/")),
        "{files:?}"
    );
    let package = fs::read_to_string(root.join("package.json")).unwrap();
    assert!(package.contains("\"my-tool\""), "{package}");
}

/// The files a `FILES` list of this repository names, one per line.
fn listed(path: &str) -> Vec<String> {
    let text = fs::read_to_string(crate::test_dir::repo_path(path)).unwrap();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

/// The `.{ext}` files in a folder of this repository and its subfolders, as paths
/// relative to it, sorted.
fn sources(dir: &str, ext: &str) -> Vec<String> {
    fn walk(root: &Path, at: &Path, ext: &str, out: &mut Vec<String>) {
        for entry in fs::read_dir(at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, ext, out);
            } else if path.to_string_lossy().ends_with(ext) {
                out.push(path.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let root = crate::test_dir::repo_path(dir);
    let mut names = Vec::new();
    walk(&root, &root, ext, &mut names);
    names.sort();
    names
}

#[test]
fn the_binary_embeds_every_file_of_each_sdk_and_template() {
    let names = |files: &[TemplateFile], prefix: &str| -> Vec<String> {
        let mut v: Vec<String> = files
            .iter()
            .map(|(p, _)| p.strip_prefix(prefix).unwrap_or(p).to_string())
            .collect();
        v.sort();
        v
    };
    let mut template = listed("guest-sdk-py/template/FILES");
    template.sort();
    assert_eq!(
        names(python::TEMPLATE, ""),
        template,
        "guest-sdk-py/template/FILES"
    );
    assert_eq!(
        names(python::SDK, "wasmhub_plugin/"),
        sources("guest-sdk-py/wasmhub_plugin", ".py")
    );
    let mut template = listed("guest-sdk-js/template/FILES");
    template.sort();
    assert_eq!(names(js::TEMPLATE, ""), template, "guest-sdk-js/template/FILES");
    let mut sdk = listed("guest-sdk-js/FILES");
    sdk.sort();
    assert_eq!(names(js::SDK, "wasmhub-plugin/"), sdk, "guest-sdk-js/FILES");
    assert_eq!(
        names(rust::SDK_SOURCES, "wasmhub-guest/src/"),
        sources("guest-sdk/src", ".rs")
    );
}

#[test]
fn never_overwrites() {
    let tmp = temp_dir("exists");
    let root = tmp.path().join("taken");
    fs::create_dir_all(&root).unwrap();
    fs::write(root.join("keep.txt"), "mine").unwrap();
    let err = scaffold("taken", tmp.path(), Lang::Rust).unwrap_err();
    assert!(matches!(&err, ScaffoldError::Exists(p) if *p == root), "{err}");
    assert_eq!(fs::read_to_string(root.join("keep.txt")).unwrap(), "mine");
    assert!(!root.join("Cargo.toml").exists());
    // A bad name writes nothing at all.
    assert!(scaffold("Bad", tmp.path(), Lang::Python).is_err());
    assert!(!tmp.path().join("Bad").exists());
}

#[test]
fn creates_missing_parents() {
    let tmp = temp_dir("parents");
    let dest = tmp.path().join("a").join("b");
    scaffold("p", &dest, Lang::Rust).unwrap();
    assert!(dest.join("p/Cargo.toml").is_file());
}

#[test]
fn io_failures_name_the_path() {
    let tmp = temp_dir("io");
    let blocker = tmp.path().join("file");
    fs::write(&blocker, "not a directory").unwrap();
    let err = scaffold("p", &blocker, Lang::Js).unwrap_err();
    assert!(
        matches!(&err, ScaffoldError::Io { path, .. } if *path == blocker),
        "{err}"
    );
    assert!(std::error::Error::source(&err).is_some());
}
