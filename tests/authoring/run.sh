#!/usr/bin/env bash
# Plugin authors outside this repository. In a temporary folder that holds nothing
# of the checkout but a copy of the built `wasmhub` binary, for Rust, Python and
# JavaScript: `wasmhub plugin new NAME --lang L`, the project's own unit tests, its
# one documented build command, `plugin check`, `plugin test` (every example through
# the sandbox), `plugin inspect` of the scaffold's manifest (one secret, one
# configuration key) and `wasmhub call` of the scaffolded operation. Also packages the Rust
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
    wasmhub plugin check "$wasm" | tee /dev/stderr | grep -q "ok: plugin $name (wasmhub:plugin@0.2.0)"
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

# --- The Rust SDK as a package ---------------------------------------------------
# `cargo package` builds the packaged crate on its own: nothing it needs may live
# outside guest-sdk/ (its WIT copy included).
step "rust: cargo package -p wasmhub-guest" \
    bash -c "cd '$root' && cargo package --quiet --allow-dirty -p wasmhub-guest"

echo
echo "authoring: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
