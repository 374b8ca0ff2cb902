#!/usr/bin/env bash
# Builds everything (the example plugins for wasm32-wasip2, installing the target
# and componentize-py when missing, and the hub) and runs the hub on the example
# plugins at http://127.0.0.1:8787. Extra arguments go to `wasmhub serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build-plugins.sh
cargo build -p wasmhub
exec target/debug/wasmhub serve --plugins dist/plugins "$@"
