#!/usr/bin/env bash
# Builds the adversarial test guests (tests/guests/*/) for wasm32-wasip2 and copies
# each component to target/test-guests/<name>.wasm. The e2e tests run this once per
# test process when a guest is missing, so `cargo test` alone works.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/target/test-guests"
mkdir -p "$out"
# One target dir for all guests so wit-bindgen and serde_json compile once.
export CARGO_TARGET_DIR="$out/build"
for dir in "$root"/tests/guests/*/; do
  name="$(basename "$dir")"
  [ -f "$dir/Cargo.toml" ] || continue
  cargo build --quiet --release --target wasm32-wasip2 --manifest-path "$dir/Cargo.toml"
  cp "$CARGO_TARGET_DIR/wasm32-wasip2/release/guest_${name}.wasm" "$out/$name.wasm"
done
ls -l "$out"/*.wasm
