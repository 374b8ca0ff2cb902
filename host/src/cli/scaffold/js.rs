//! The JavaScript project of `plugin new --lang js`: `plugin.js` with one working
//! operation on the `wasmhub-plugin` SDK (plain ES modules, vendored into the
//! project as `wasmhub-plugin/` beside the WIT), its `node --test` tests, and a
//! `package.json` whose `build` script runs componentize-js (pinned).

use super::TemplateFile;

/// The template files (`guest-sdk-js/template/`, listed in its `FILES`).
pub(super) const TEMPLATE: &[TemplateFile] = &[
    (
        "plugin.js",
        include_str!("../../../../guest-sdk-js/template/plugin.js"),
    ),
    (
        "component.js",
        include_str!("../../../../guest-sdk-js/template/component.js"),
    ),
    (
        "package.json",
        include_str!("../../../../guest-sdk-js/template/package.json"),
    ),
    (
        "plugin.test.mjs",
        include_str!("../../../../guest-sdk-js/template/plugin.test.mjs"),
    ),
    (
        "README.md",
        include_str!("../../../../guest-sdk-js/template/README.md"),
    ),
    (
        ".gitignore",
        include_str!("../../../../guest-sdk-js/template/.gitignore"),
    ),
];

/// The SDK (`guest-sdk-js/`, listed in its `FILES`), vendored as `wasmhub-plugin/`.
pub(super) const SDK: &[TemplateFile] = &[
    (
        "wasmhub-plugin/package.json",
        include_str!("../../../../guest-sdk-js/package.json"),
    ),
    (
        "wasmhub-plugin/index.js",
        include_str!("../../../../guest-sdk-js/index.js"),
    ),
    (
        "wasmhub-plugin/lib/errors.js",
        include_str!("../../../../guest-sdk-js/lib/errors.js"),
    ),
    (
        "wasmhub-plugin/lib/examples.js",
        include_str!("../../../../guest-sdk-js/lib/examples.js"),
    ),
    (
        "wasmhub-plugin/lib/host.js",
        include_str!("../../../../guest-sdk-js/lib/host.js"),
    ),
    (
        "wasmhub-plugin/lib/json.js",
        include_str!("../../../../guest-sdk-js/lib/json.js"),
    ),
    (
        "wasmhub-plugin/lib/plugin.js",
        include_str!("../../../../guest-sdk-js/lib/plugin.js"),
    ),
    (
        "wasmhub-plugin/lib/schema.js",
        include_str!("../../../../guest-sdk-js/lib/schema.js"),
    ),
];

/// Every file of a new JavaScript plugin project.
pub(super) fn files() -> Vec<(&'static str, String)> {
    let mut files = super::owned(TEMPLATE);
    files.extend(super::owned(SDK));
    files.push(super::wit_file("wit/plugin.wit"));
    files
}

/// What to run after `plugin new`.
pub(super) fn next_steps(name: &str) -> String {
    format!(
        "npm install && npm run build   # componentize-js, pinned, builds {name}.wasm\n\
         npm test                       # the operations' logic, natively (node --test)\n\
         wasmhub plugin check {name}.wasm\n\
         wasmhub plugin test {name}.wasm"
    )
}
