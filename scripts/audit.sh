#!/usr/bin/env bash
# Offline advisory audit: checks Cargo.lock against the RustSec advisory database
# snapshot in ../shared/advisory-db (a git bundle), installing cargo-audit from
# crates.io into a cache outside the clone when missing. Fails on any vulnerability.
# With network access, `cargo audit` alone fetches the live database instead.
set -euo pipefail
cd "$(dirname "$0")/.."

cache="${WASMHUB_CACHE:-$HOME/.cache/wasmhub}"
bundle="${ADVISORY_DB_BUNDLE:-../shared/advisory-db/advisory-db.bundle}"
if [ ! -f "$bundle" ]; then
    echo "audit: advisory database bundle not found at $bundle (set ADVISORY_DB_BUNDLE)" >&2
    exit 1
fi
audit_bin="$cache/cargo-audit/bin/cargo-audit"
if ! [ -x "$audit_bin" ]; then
    echo "audit: installing cargo-audit 0.22.2 into $cache/cargo-audit"
    cargo install --quiet --locked cargo-audit --version 0.22.2 --root "$cache/cargo-audit"
fi
db=$(mktemp -d)
trap 'rm -rf "$db"' EXIT
git -c init.defaultBranch=main clone -q "$bundle" "$db/advisory-db"
"$audit_bin" audit --db "$db/advisory-db" --no-fetch --stale
