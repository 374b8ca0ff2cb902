//! The Python project of `plugin new --lang python`: `app.py` with one working
//! operation on the `wasmhub_plugin` SDK (pure Python, vendored into the project
//! beside the WIT), its unit tests, and `build.py`, the one build command
//! (componentize-py, pinned, into a `.venv` of the project's own).

use super::TemplateFile;

/// The template files (`guest-sdk-py/template/`, listed in its `FILES`).
pub(super) const TEMPLATE: &[TemplateFile] = &[
    ("app.py", include_str!("../../../../guest-sdk-py/template/app.py")),
    (
        "build.py",
        include_str!("../../../../guest-sdk-py/template/build.py"),
    ),
    (
        "test_app.py",
        include_str!("../../../../guest-sdk-py/template/test_app.py"),
    ),
    (
        "README.md",
        include_str!("../../../../guest-sdk-py/template/README.md"),
    ),
    (
        ".gitignore",
        include_str!("../../../../guest-sdk-py/template/.gitignore"),
    ),
];

/// The SDK package, vendored as `wasmhub_plugin/`.
pub(super) const SDK: &[TemplateFile] = &[
    (
        "wasmhub_plugin/__init__.py",
        include_str!("../../../../guest-sdk-py/wasmhub_plugin/__init__.py"),
    ),
    (
        "wasmhub_plugin/_types.py",
        include_str!("../../../../guest-sdk-py/wasmhub_plugin/_types.py"),
    ),
    (
        "wasmhub_plugin/codec.py",
        include_str!("../../../../guest-sdk-py/wasmhub_plugin/codec.py"),
    ),
    (
        "wasmhub_plugin/errors.py",
        include_str!("../../../../guest-sdk-py/wasmhub_plugin/errors.py"),
    ),
    (
        "wasmhub_plugin/host.py",
        include_str!("../../../../guest-sdk-py/wasmhub_plugin/host.py"),
    ),
    (
        "wasmhub_plugin/operation.py",
        include_str!("../../../../guest-sdk-py/wasmhub_plugin/operation.py"),
    ),
    (
        "wasmhub_plugin/plugin.py",
        include_str!("../../../../guest-sdk-py/wasmhub_plugin/plugin.py"),
    ),
    (
        "wasmhub_plugin/schema.py",
        include_str!("../../../../guest-sdk-py/wasmhub_plugin/schema.py"),
    ),
];

/// Every file of a new Python plugin project.
pub(super) fn files() -> Vec<(&'static str, String)> {
    let mut files = super::owned(TEMPLATE);
    files.extend(super::owned(SDK));
    files.push(super::wit_file("wit/plugin.wit"));
    files
}

/// What to run after `plugin new`.
pub(super) fn next_steps(name: &str) -> String {
    format!(
        "python3 build.py            # creates .venv, installs componentize-py, builds {name}.wasm\n\
         python3 -m unittest          # the operations' logic, natively\n\
         wasmhub plugin check {name}.wasm\n\
         wasmhub plugin test {name}.wasm"
    )
}
