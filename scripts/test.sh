#!/usr/bin/env bash
# Runs every test of the project: the Rust unit and end-to-end tests (the real
# sandbox, real example plugins, the real binary on loopback), the Python plugin's
# tests, the Python and JavaScript SDKs' tests, plugin authoring in all three
# languages outside the checkout, and the suites that drive the hub with real
# clients (AI SDK, OpenAI SDK, MCP conformance and SDK clients, OpenTelemetry traces to a strict OTLP decoder, the MCP SDKs' OAuth
# through the built-in authorization server and oidc-provider's JWTs, headless Chromium: the chat page and the operator console, a real OCI registry with the oras client,
# three replicas on PostgreSQL behind HAProxy), and the Kubernetes manifests in deploy/.
# The Rust tests run with the `postgres` feature against a throwaway PostgreSQL
# (scripts/pg.sh), so the storage conformance suites run on sled and on PostgreSQL.
# Needs only Rust via rustup, python3 and node/npm from the machine; every other tool
# is installed on the way.
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

# Artifacts every suite needs; a failure here stops the run. The host is built once,
# by its test build (scripts/cargo-test.sh), which also makes target/debug/wasmhub
# with the same features for every suite below.
bash scripts/build-plugins.sh
bash tests/guests/build.sh
bash scripts/cargo-test.sh --no-run

pg="$(mktemp -d)"
trap 'bash scripts/pg.sh stop "$pg"' EXIT
trap 'exit 1' INT TERM
database_url="$(bash scripts/pg.sh start "$pg")"

suite "cargo test (unit + e2e; storage on sled and PostgreSQL)" \
    env WASMHUB_TEST_DATABASE_URL="$database_url" bash scripts/cargo-test.sh
bash scripts/pg.sh stop "$pg"
suite "units plugin (python)" python3 -m unittest discover -s plugins/units -t plugins/units
suite "python SDK" python3 -m unittest discover -s guest-sdk-py/tests -t guest-sdk-py
suite "javascript SDK + dates plugin" bash -c "node --test guest-sdk-js/test/ && cd plugins/dates && node --test"
suite "plugin authors outside the repo (rust, python, js)" bash tests/authoring/run.sh
suite "AI SDK + OpenAI + Anthropic clients" bash tests/node/run.sh
suite "MCP conformance + SDK clients" bash tests/mcp/run.sh
suite "OpenTelemetry: traces to a strict OTLP decoder, MCP SDK client, /metrics" bash tests/otel/run.sh
suite "OAuth: MCP SDK clients (Python, TypeScript) + consent in Chromium, oidc-provider JWTs, browser CORS" bash tests/oauth/run.sh
suite "chat: AI SDK useChat + Chromium" bash tests/chat/run.sh
suite "operator console: Chromium" bash tests/console/run.sh
suite "plugin distribution: OCI registry + oras" bash tests/oci/run.sh
suite "replicas: PostgreSQL + HAProxy + AI SDK + MCP SDK" bash tests/replicas/run.sh
suite "deploy: Kubernetes manifests" bash tests/deploy/run.sh

echo
if [ "$failed" -gt 0 ]; then
    echo "failed suites: ${failures[*]}"
fi
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
