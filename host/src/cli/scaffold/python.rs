//! The Python project of `plugin new --lang python`: `app.py` with one working
//! operation on the `wasmhub_plugin` SDK (pure Python, vendored into the project
//! beside the WIT), its unit tests, and `build.py`, the one build command
//! (componentize-py, pinned, into a `.venv` of the project's own).

use super::TemplateFile;

/// One file of `guest-sdk-py/`, as this binary was built with it, at `$dest` in the project.
macro_rules! embedded {
    ($dest:literal, $source:literal) => {
        ($dest, include_str!(concat!("../../../../guest-sdk-py/", $source)))
    };
}

/// The template files (`guest-sdk-py/template/`, listed in its `FILES`).
pub(super) const TEMPLATE: &[TemplateFile] = &[
    embedded!("app.py", "template/app.py"),
    embedded!("build.py", "template/build.py"),
    embedded!("test_app.py", "template/test_app.py"),
    embedded!("README.md", "template/README.md"),
    embedded!(".gitignore", "template/.gitignore"),
];

/// The SDK package, vendored as `wasmhub_plugin/`.
pub(super) const SDK: &[TemplateFile] = &[
    embedded!("wasmhub_plugin/__init__.py", "wasmhub_plugin/__init__.py"),
    embedded!("wasmhub_plugin/_types.py", "wasmhub_plugin/_types.py"),
    embedded!("wasmhub_plugin/codec.py", "wasmhub_plugin/codec.py"),
    embedded!("wasmhub_plugin/config.py", "wasmhub_plugin/config.py"),
    embedded!("wasmhub_plugin/errors.py", "wasmhub_plugin/errors.py"),
    embedded!("wasmhub_plugin/host.py", "wasmhub_plugin/host.py"),
    embedded!("wasmhub_plugin/operation.py", "wasmhub_plugin/operation.py"),
    embedded!("wasmhub_plugin/plugin.py", "wasmhub_plugin/plugin.py"),
    embedded!("wasmhub_plugin/schema.py", "wasmhub_plugin/schema.py"),
];

/// Every file of a new Python plugin project.
pub(super) fn files() -> Vec<(&'static str, String)> {
    let wit = super::WitPaths {
        contract: "wit/plugin.wit",
        config: "wit/deps/config/store.wit",
    };
    super::with_sdk(TEMPLATE, SDK, wit)
}

/// How to build and unit-test it, one command per line.
pub(super) fn build_steps(name: &str) -> String {
    format!(
        "python3 build.py            # creates .venv, installs componentize-py, builds {name}.wasm\n\
         python3 -m unittest          # the operations' logic, natively"
    )
}
