#!/usr/bin/env bash
# Plugin authors outside this repository. In a temporary folder that holds nothing
# of the checkout but a copy of the built `wasmhub` binary, for Rust, Python and
# JavaScript: `wasmhub plugin new NAME --lang L`, the project's own unit tests, its
# one documented build command, `plugin check`, `plugin test` (every example through
# the sandbox), `plugin inspect` of the scaffold's manifest (one secret, one
# configuration key), `wasmhub call` of the scaffolded operation, the operator's
# configuration read through each SDK, and a secret declared `reveal = true` read
# through each SDK's accessor (the hub scrubbing the value). Also packages the Rust
# SDK crate in isolation (`cargo package`, which builds the packaged crate alone).
#
# Toolchains come from the registries, pinned by the scaffolds themselves
# (componentize-py 0.25.1 in the project's .venv, componentize-js from its
# package.json); build outputs that can be shared across runs (cargo's target
# folder) live in the cache outside the clone.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cache="${WASMHUB_CACHE:-$HOME/.cache/wasmhub}"
bin="$root/target/debug/wasmhub"
[ -x "$bin" ] || { echo "build the hub first: bash scripts/cargo-test.sh --no-run" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/wasmhub-authoring.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/plugins"
cp "$bin" "$work/bin/wasmhub"
export PATH="$work/bin:$PATH"
# Rust builds share one target folder across runs (serde, wit-bindgen, schemars).
export CARGO_TARGET_DIR="$cache/authoring-target"

passed=0
failed=0
step() {
    local name=$1
    shift
    if "$@" >"$work/step.log" 2>&1; then
        passed=$((passed + 1))
        echo "ok    $name"
    else
        failed=$((failed + 1))
        echo "FAIL  $name"
        sed 's/^/      /' "$work/step.log" | tail -40
    fi
}

# The scaffolded operation of every language is `repeat`; the answer is checked.
expect_call() {
    local tool=$1 want=$2 out
    out="$(cd "$work" && wasmhub call "$tool" '{"text": "ab", "times": 3, "separator": ""}' --plugins "$work/plugins")"
    echo "$out"
    grep -q "$want" <<<"$out"
}

# `plugin check` and `plugin test` say what they ran; both must name the plugin. The
# scaffold's manifest (beside the component) declares a secret and a configuration
# key: `plugin inspect` names the secret as unset and the key with its default.
check_and_test() {
    local wasm=$1 name=$2
    wasmhub plugin check "$wasm" | tee /dev/stderr | grep -q "ok: plugin $name (wasmhub:plugin@0.3.0)"
    wasmhub plugin test "$wasm" | tee /dev/stderr | grep -Eq "^$name: [1-9][0-9]* passed, 0 failed$"
    local inspected
    inspected="$(wasmhub plugin inspect "$wasm" --data "$work/data-$name")"
    echo "$inspected"
    grep -q "API_KEY: UNSET: wasmhub secret set $name API_KEY; injected into api.example.com" <<<"$inspected"
    grep -q 'separator (string) = ""' <<<"$inspected"
}

cd "$work"

# --- Rust ------------------------------------------------------------------------
step "rust: plugin new" wasmhub plugin new rs-demo --lang rust
step "rust: cargo test (examples run natively)" bash -c "cd rs-demo && cargo test --quiet"
step "rust: cargo build --release --target wasm32-wasip2" \
    bash -c "cd rs-demo && cargo build --quiet --release --target wasm32-wasip2"
# Cargo names the artifact after the crate (rs_demo); the plugin name is the file stem.
cp "$CARGO_TARGET_DIR/wasm32-wasip2/release/rs_demo.wasm" "$work/plugins/rs-demo.wasm" 2>/dev/null || true
cp rs-demo/rs-demo.toml "$work/plugins/" 2>/dev/null || true
step "rust: plugin check + plugin test" check_and_test "$work/plugins/rs-demo.wasm" rs-demo
step "rust: wasmhub call rs-demo.repeat" expect_call rs-demo.repeat '"ababab"'

# --- Python ----------------------------------------------------------------------
step "python: plugin new" wasmhub plugin new py-demo --lang python
step "python: unit tests" bash -c "cd py-demo && python3 -m unittest"
step "python: python3 build.py" bash -c "cd py-demo && python3 build.py"
step "python: plugin check + plugin test" check_and_test py-demo/py-demo.wasm py-demo
cp py-demo/py-demo.wasm py-demo/py-demo.toml "$work/plugins/" 2>/dev/null || true
step "python: wasmhub call py-demo.repeat" expect_call py-demo.repeat '"ababab"'

# --- JavaScript ------------------------------------------------------------------
step "js: plugin new" wasmhub plugin new js-demo --lang js
step "js: npm install && npm run build" bash -c "cd js-demo && npm install --no-audit --no-fund && npm run build"
step "js: unit tests" bash -c "cd js-demo && npm test"
step "js: plugin check + plugin test" check_and_test js-demo/js-demo.wasm js-demo
cp js-demo/js-demo.wasm js-demo/js-demo.toml "$work/plugins/" 2>/dev/null || true
step "js: wasmhub call js-demo.repeat" expect_call js-demo.repeat '"ababab"'

# --- Configuration and revealed secrets, through each SDK ------------------------
# The operator's configuration reaches each language's operation through its SDK
# (`[plugin.NAME] config`: repeat without a separator joins with it). A signer per
# language (tests/authoring/signer/, over a fresh scaffold) declares a secret with
# `reveal = true`; the operator allows it and sets the value through stdin; `sign`
# reads it with its SDK's accessor and answers its length and last 4 characters,
# and the value itself, which the hub scrubs.
signing_key="sk-test-0123456789abcdef"
operator="$work/operator.toml"
{
    echo "plugins_dir = \"$work/plugins\""
    echo "data_dir = \"$work/data\""
    echo "[secrets]"
    echo "key_file = \"$work/secrets.key\""
    for name in rs-demo py-demo js-demo; do
        printf '[plugin.%s]\nconfig = { separator = "+" }\n' "$name"
    done
    for name in rs-signer py-signer js-signer; do
        printf '[plugin.%s]\nallow_reveal = true\n' "$name"
    done
} >"$operator"

expect_configured() {
    local tool=$1 want=$2 out
    out="$(cd "$work" && wasmhub call "$tool" '{"text": "ab", "times": 3}' --config "$operator")"
    echo "$out"
    grep -q "$want" <<<"$out"
}
step "rust: the operator's separator through wasmhub_guest::config" expect_configured rs-demo.repeat '"ab+ab+ab"'
step "python: the operator's separator through wasmhub_plugin.config" expect_configured py-demo.repeat '"ab+ab+ab"'
step "js: the operator's separator through config.getString" expect_configured js-demo.repeat '"ab+ab+ab"'

# A signer project: the scaffold with its operation file replaced (and its tests of
# the scaffold's operation removed: Rust's are in the replaced file), the reveal
# secret added to its manifest.
new_signer() {
    local name=$1 lang=$2 source=$3 dest=$4 tests=${5:-}
    wasmhub plugin new "$name" --lang "$lang"
    cp "$root/tests/authoring/signer/$source" "$name/$dest"
    if [ -n "$tests" ]; then rm "$name/$tests"; fi
    printf '\n[secrets.SIGNING_KEY]\ndescription = "the key sign reads"\nreveal = true\n' >>"$name/$name.toml"
}
build_rs_signer() {
    new_signer rs-signer rust lib.rs src/lib.rs
    (cd rs-signer && cargo build --quiet --release --target wasm32-wasip2)
    cp "$CARGO_TARGET_DIR/wasm32-wasip2/release/rs_signer.wasm" "$work/plugins/rs-signer.wasm"
    cp rs-signer/rs-signer.toml "$work/plugins/"
}
build_py_signer() {
    new_signer py-signer python app.py app.py test_app.py
    (cd py-signer && python3 build.py)
    cp py-signer/py-signer.wasm py-signer/py-signer.toml "$work/plugins/"
}
build_js_signer() {
    new_signer js-signer js plugin.js plugin.js plugin.test.mjs
    (cd js-signer && npm install --no-audit --no-fund && npm run build)
    cp js-signer/js-signer.wasm js-signer/js-signer.toml "$work/plugins/"
}
step "rust: signer built" build_rs_signer
step "python: signer built" build_py_signer
step "js: signer built" build_js_signer
step "secret keygen" wasmhub secret keygen "$work/secrets.key"

expect_signed() {
    local name=$1 out
    printf %s "$signing_key" | wasmhub secret set --config "$operator" "$name" SIGNING_KEY
    out="$(cd "$work" && wasmhub call "$name.sign" '{}' --config "$operator")"
    echo "$out"
    grep -q '"length": *24' <<<"$out"
    grep -q '"last4": *"cdef"' <<<"$out"
    grep -q '"echo": *"\[redacted:SIGNING_KEY\]"' <<<"$out"
    if grep -q "0123456789abcdef" <<<"$out"; then return 1; fi
}
step "rust: wasmhub_guest::secret::reveal" expect_signed rs-signer
step "python: reveal_secret" expect_signed py-signer
step "js: revealSecret" expect_signed js-signer

# --- The Rust SDK as a package ---------------------------------------------------
# `cargo package` builds the packaged crate on its own: nothing it needs may live
# outside guest-sdk/ (its WIT copy included).
step "rust: cargo package -p wasmhub-guest" \
    bash -c "cd '$root' && cargo package --quiet --allow-dirty -p wasmhub-guest"

echo
echo "authoring: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
