#!/usr/bin/env bash
# LLM streaming benchmarks, side by side:
# - the hub's transformer (parse + transform + encode the recorded provider streams,
#   one thread): host/benches/transform.rs;
# - the AI SDK's own pipeline on the same streams (streamText with @ai-sdk/openai on
#   a mock fetch, toUIMessageStreamResponse): tests/node/bench/ai-sdk.mjs;
# - the latency the hub adds per streamed chunk (p99) through /v1/chat/completions
#   and /api/ui/chat/completions: host/benches/proxy_latency.rs.
# Rates are per CPU second of the measuring thread/process ("on one core").
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

echo "== hub transformer (cargo bench --bench transform)"
cargo bench -q -p wasmhub --bench transform | tee "$out/transform.txt"
echo
echo "== AI SDK pipeline (tests/node/bench/ai-sdk.mjs)"
(cd tests/node && npm ci --no-audit --no-fund --loglevel=error >/dev/null && node_modules/node22/bin/node bench/ai-sdk.mjs) | tee "$out/aisdk.txt"
echo
echo "== added latency per chunk (cargo bench --bench proxy_latency)"
cargo bench -q -p wasmhub --bench proxy_latency 2>&1 | grep -v " INFO \| WARN " | tee "$out/latency.txt"

result() { sed -n "s/^RESULT $1=//p" "$2" | tail -1; }
hub=$(result transform_chunks_per_sec "$out/transform.txt")
sdk=$(result aisdk_chunks_per_sec "$out/aisdk.txt")
proxy=$(result proxy_added_p99_us "$out/latency.txt")
ui=$(result ui_added_p99_us "$out/latency.txt")
echo
echo "== summary (medians; chunks per CPU second on one core)"
printf '  %-44s %14s\n' "hub: parse + transform + encode" "$hub chunks/s"
printf '  %-44s %14s\n' "AI SDK: streamText + toUIMessageStreamResponse" "$sdk chunks/s"
printf '  %-44s %14s\n' "ratio (goal >= 100x)" "$(awk -v a="$hub" -v b="$sdk" 'BEGIN { printf "%.1fx", a / b }')"
printf '  %-44s %14s\n' "hub >= 1,000,000 chunks/s" "$(awk -v a="$hub" 'BEGIN { print (a >= 1000000 ? "yes" : "no") }')"
printf '  %-44s %14s\n' "added p99 latency, /v1/chat/completions" "$proxy us"
printf '  %-44s %14s\n' "added p99 latency, /api/ui/chat/completions" "$ui us"
