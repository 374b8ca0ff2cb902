#!/usr/bin/env bash
# The host's one test build, the same everywhere so nothing compiles twice: every
# test of the workspace with the `postgres` feature. `cargo test` also builds
# target/debug/wasmhub (with the same features), the binary every suite under
# tests/ runs, so `scripts/cargo-test.sh --no-run` is how they build it. Arguments
# go to cargo test; the storage conformance tests on PostgreSQL need
# WASMHUB_TEST_DATABASE_URL (scripts/test.sh starts a server with scripts/pg.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo test --workspace --features wasmhub/postgres "$@"
