#!/usr/bin/env bash
# MCP load benchmark: `tools/call` of `hub_call` running one trivial operation
# (calc.eval "1+1"), over loopback, stateless 2026-07-28 revision (one self-contained
# POST per call, no session), against the release binary with the example plugins.
# wrk drives 1, 16 and 64 connections; the 1-connection run is a sequential client,
# whose p50 is the sequential median. Prints one line per run and a summary.
#   usage: scripts/bench-mcp.sh [seconds per run, default 10]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
duration="${1:-10}"

if ! command -v wrk >/dev/null; then
    apt-get install -y wrk >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y wrk >/dev/null; }
fi
cargo build --release -p wasmhub
ls dist/plugins/calc.wasm >/dev/null 2>&1 || bash scripts/build-plugins.sh

work="$(mktemp -d)"
hub_pid=""
cleanup() {
    if [ -n "$hub_pid" ]; then
        kill "$hub_pid" 2>/dev/null || true
        wait "$hub_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
cat > "$work/bench.toml" <<EOF
plugins_dir = "$root/dist/plugins"
data_dir = "$work/data"
EOF
WASMHUB_LOG=warn target/release/wasmhub serve --config "$work/bench.toml" --listen "127.0.0.1:$port" \
    >"$work/hub.log" 2>&1 &
hub_pid=$!
for _ in $(seq 1 600); do
    curl -fsS "http://127.0.0.1:$port/health" 2>/dev/null | grep -q '"operations":[1-9]' && break
    sleep 0.2
done

body='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hub_call","arguments":{"calls":[{"tool":"calc.eval","input":{"expression":"1+1"}}]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
# Check the call really succeeds before timing it.
answer="$(curl -fsS "http://127.0.0.1:$port/mcp" -H 'content-type: application/json' \
    -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2026-07-28' \
    -H 'mcp-method: tools/call' -H 'mcp-name: hub_call' -d "$body")"
echo "$answer" | grep -q '"ok":true' || { echo "the benchmark call fails: $answer" >&2; exit 1; }

cat > "$work/call.lua" <<EOF
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "hub_call"

function response(status, headers, body)
    if status ~= 200 or not string.find(body, '"ok":true', 1, true) then
        wrk.thread:stop()
        io.stderr:write("unexpected answer: " .. status .. " " .. body .. "\n")
    end
end

function done(summary, latency, requests)
    io.write(string.format("RESULT calls/s=%.0f p50_ms=%.3f p99_ms=%.3f errors=%d\n",
        summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
        latency:percentile(99) / 1000,
        summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout))
end
EOF

echo "MCP tools/call hub_call(calc.eval 1+1), 2026-07-28 stateless, ${duration}s per run, $(nproc) cores shared with wrk"
for conns in 1 16 64; do
    threads=$((conns < 2 ? 1 : 2))
    # One warm-up second so the plugin instance pool and caches are hot.
    wrk -t"$threads" -c"$conns" -d1s -s "$work/call.lua" "http://127.0.0.1:$port/mcp" >/dev/null
    line="$(wrk -t"$threads" -c"$conns" -d"${duration}s" -s "$work/call.lua" "http://127.0.0.1:$port/mcp" | grep RESULT)"
    echo "connections=$conns ${line#RESULT }"
    if [ "$conns" -eq 1 ]; then
        echo "  (1 connection = a sequential client: its p50 is the sequential median)"
    fi
done
