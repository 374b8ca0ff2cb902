#!/usr/bin/env bash
# Runs every test of the project: the Rust unit and end-to-end tests (the real
# sandbox, real example plugins, the real binary on loopback), the Python plugin's
# tests, the Python and JavaScript SDKs' tests, plugin authoring in all three
# languages outside the checkout, and the suites that drive the hub with real
# clients (AI SDK, OpenAI SDK, MCP conformance and SDK clients, headless Chromium: the chat page and the operator console, a real OCI registry with the oras client). Needs only Rust via rustup,
# python3 and node/npm from the machine; every other tool is installed on the way.
set -euo pipefail
cd "$(dirname "$0")/.."

passed=0
failed=0
failures=()
suite() {
    local name=$1
    shift
    echo
    echo "=== $name"
    if "$@"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        failures+=("$name")
    fi
}

# Artifacts every suite needs; a failure here stops the run.
bash scripts/build-plugins.sh
bash tests/guests/build.sh
cargo build -p wasmhub

suite "cargo test (unit + e2e)" cargo test --workspace
suite "units plugin (python)" python3 -m unittest discover -s plugins/units -t plugins/units
suite "python SDK" python3 -m unittest discover -s guest-sdk-py/tests -t guest-sdk-py
suite "javascript SDK + dates plugin" bash -c "node --test guest-sdk-js/test/ && cd plugins/dates && node --test"
suite "plugin authors outside the repo (rust, python, js)" bash tests/authoring/run.sh
suite "AI SDK + OpenAI + Anthropic clients" bash tests/node/run.sh
suite "MCP conformance + SDK clients" bash tests/mcp/run.sh
suite "chat: AI SDK useChat + Chromium" bash tests/chat/run.sh
suite "operator console: Chromium" bash tests/console/run.sh
suite "plugin distribution: OCI registry + oras" bash tests/oci/run.sh

echo
if [ "$failed" -gt 0 ]; then
    echo "failed suites: ${failures[*]}"
fi
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
