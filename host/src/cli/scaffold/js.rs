//! The JavaScript project of `plugin new --lang js`: `plugin.js` with one working
//! operation on the `wasmhub-plugin` SDK (plain ES modules, vendored into the
//! project as `wasmhub-plugin/` beside the WIT), its `node --test` tests, and a
//! `package.json` whose `build` script runs componentize-js (pinned).

use super::TemplateFile;

/// One file of `guest-sdk-js/`, as this binary was built with it, at `$dest` in the project.
macro_rules! embedded {
    ($dest:literal, $source:literal) => {
        ($dest, include_str!(concat!("../../../../guest-sdk-js/", $source)))
    };
}

/// The template files (`guest-sdk-js/template/`, listed in its `FILES`).
pub(super) const TEMPLATE: &[TemplateFile] = &[
    embedded!("plugin.js", "template/plugin.js"),
    embedded!("component.js", "template/component.js"),
    embedded!("package.json", "template/package.json"),
    embedded!("plugin.test.mjs", "template/plugin.test.mjs"),
    embedded!("README.md", "template/README.md"),
    embedded!(".gitignore", "template/.gitignore"),
];

/// The SDK (`guest-sdk-js/`, listed in its `FILES`), vendored as `wasmhub-plugin/`.
pub(super) const SDK: &[TemplateFile] = &[
    embedded!("wasmhub-plugin/package.json", "package.json"),
    embedded!("wasmhub-plugin/index.js", "index.js"),
    embedded!("wasmhub-plugin/lib/config.js", "lib/config.js"),
    embedded!("wasmhub-plugin/lib/errors.js", "lib/errors.js"),
    embedded!("wasmhub-plugin/lib/examples.js", "lib/examples.js"),
    embedded!("wasmhub-plugin/lib/host.js", "lib/host.js"),
    embedded!("wasmhub-plugin/lib/json.js", "lib/json.js"),
    embedded!("wasmhub-plugin/lib/plugin.js", "lib/plugin.js"),
    embedded!("wasmhub-plugin/lib/schema.js", "lib/schema.js"),
];

/// Every file of a new JavaScript plugin project.
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
        "npm install && npm run build   # componentize-js, pinned, builds {name}.wasm\n\
         npm test                       # the operations' logic, natively (node --test)"
    )
}
