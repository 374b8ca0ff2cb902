#!/usr/bin/env bash
# Proves the hub's OpenTelemetry traces and metrics against a real OTLP receiver, on
# loopback: receiver.py decodes every export with the official protocol
# definitions (PyPI opentelemetry-proto, strict json_format.Parse into
# ExportTraceServiceRequest) and keeps the spans; a scripted OpenAI-compatible
# model (receiver.py upstream) answers the agent's steps with usage and records the
# traceparent of every request it gets. check.py then drives the hub with the PyPI
# `mcp` 2.x client and plain HTTP and asserts:
#   - a tools/call with _meta.traceparent -> the server span `tools/call hub_call`
#     under that parent (the HTTP request's span a link) with the MCP conventions'
#     attributes, `execute_tool calc.eval` under it;
#   - fetch.get (manifest: network.trace_context = true) -> a CLIENT span `GET`
#     under its call, and the request carried that span as traceparent (and only
#     the baggage telemetry.forward_baggage allows);
#   - an isError result -> error.type = tool_error on the server span;
#   - /api/chat -> POST -> invoke_agent -> chat scripted-1 (usage, one per step,
#     each model request carrying its span) and execute_tool hub_call ->
#     execute_tool calc.eval;
#   - /metrics: mcp_server_operation_duration_seconds, the exported spans, and the
#     chat metrics under an upstream that fails (errors), a client that leaves
#     mid-stream (aborts by the client) and a stopped turn (aborts by the server).
#   - the chat metrics of the OpenAI proxy and /v1/messages (a streamed answer with
#     an event the hub cannot read: a request, its first byte, an unknown upstream
#     event; an upstream that fails: an error; a client that leaves mid-stream: an
#     abort by the client), of /api/ui/chat/completions (an error), and the GenAI
#     client metrics (operation duration, token usage);
#   - the chat metrics of agent turns: the unknown upstream event of a step on
#     /api/chat, /v1/agents (streamed), the proxy and /v1/messages naming an agent;
#     a non-streamed /v1/agents answer (a request, no first byte); the JSON answers;
#   - a model call the proxy relays and one /v1/messages forwards: a `chat MODEL`
#     span under the request's span (usage, finish reason, messages), the provider's
#     request under it;
#   - capture_content: the chat spans' gen_ai.input.messages / gen_ai.output.messages
#     (the conventions' JSON), a bearer token in the user's text redacted, a long
#     text cut naming telemetry.max_content_bytes, the JSON still whole;
#   - an external MCP server ([[mcp_servers]] over HTTP, receiver.py mcp) gets the
#     hub's CLIENT span `tools/call whoami` as _meta.traceparent and traceparent
#     header, and only the baggage telemetry.forward_baggage allows (so does the
#     model provider);
#   - HTTP spans named by route (`POST /api/chat`, `POST /mcp`, with http.route);
#   - `wasmhub mcp --stdio` started by the mcp client: its tools/call span under the
#     client's _meta.traceparent, network.transport = pipe.
# Then two replicas on a throwaway PostgreSQL (scripts/pg.sh): a turn started on
# one (with a traceparent) and followed and stopped from the other stays in one
# trace: `resume_turn` of the second replica under the first one's request span.
# Then the receiver is stopped: calls still answer, and the drop counter moves; and
# started again on its port: the exporter's probe finds it and spans arrive again.
# Prints `N passed, M failed`; exits non-zero on any failure.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=tests/lib/suite.sh
source "$root/tests/lib/suite.sh"

need_built calc fetch
python_venv "$cache/otel-venv" "$here/requirements.lock"
suite_work

"$python" "$here/receiver.py" receiver >"$work/receiver.url" 2>"$work/receiver.log" &
receiver_pid=$!
pids+=("$receiver_pid")
"$python" "$here/receiver.py" upstream >"$work/upstream.url" 2>"$work/upstream.log" &
pids+=($!)
"$python" "$here/receiver.py" mcp >"$work/mcp.url" 2>"$work/mcp.log" &
pids+=($!)
for f in receiver upstream mcp; do
    for _ in $(seq 100); do
        [ -s "$work/$f.url" ] && break
        sleep 0.1
    done
done
receiver="$(head -n1 "$work/receiver.url")"
upstream="$(head -n1 "$work/upstream.url")"
mcp_server="$(head -n1 "$work/mcp.url")"
upstream_port="${upstream##*:}"

mkdir "$work/plugins"
cp "$plugins/calc.wasm" "$plugins/fetch.wasm" "$work/plugins/"
cat > "$work/plugins/fetch.toml" <<EOF
[network]
allow = ["127.0.0.1:$upstream_port"]
trace_context = true
EOF
port="$(free_port)"
cat > "$work/wasmhub.toml" <<EOF
listen = "127.0.0.1:$port"
plugins_dir = "$work/plugins"
data_dir = "$work/data"

[[providers]]
name = "scripted"
base_url = "$upstream/v1"
models = ["scripted-1", "failing-1", "slow-1", "garbled-1"]
max_retries = 0

[agent]
model = "scripted/scripted-1"

# An agent whose model sends an event the hub cannot read before its answer.
[[agents]]
name = "garbler"
model = "scripted/garbled-1"

[telemetry]
otlp_endpoint = "$receiver"
service_name = "wasmhub-otel-suite"
flush_ms = 100
export_timeout_ms = 2000
# A collector that comes back is probed for at most every 400 ms.
probe_max_ms = 400
# Every storage wait is a span here (0), to see them in the chat's trace.
storage_wait_ms = 0
# Inputs and outputs on spans (tool calls, model messages), redacted and cut.
capture_content = true
max_content_bytes = 2048
# Only the client's "tier" baggage goes on to providers, plugins and MCP servers.
forward_baggage = ["tier"]

# An external MCP server over HTTP that records the trace context it gets.
[[mcp_servers]]
name = "tracer"
transport = "http"
url = "$mcp_server/mcp"
EOF
"$bin" serve --config "$work/wasmhub.toml" >"$work/hub.log" 2>&1 &
pids+=($!)
hub="http://127.0.0.1:$port"
wait_health "$hub" "$work/hub.log"

status=0
HUB_URL="$hub" RECEIVER_URL="$receiver" UPSTREAM_URL="$upstream" MCP_SERVER_URL="$mcp_server" WASMHUB_BIN="$bin" \
    WASMHUB_CONFIG="$work/wasmhub.toml" STDIO_DATA="$work/data-stdio" "$python" "$here/check.py" || status=1

# Two replicas on PostgreSQL, exporting to the same receiver: a turn started on one
# and followed (then stopped) from the other stays in one trace.
pg="$(mktemp -d)"
suite_cleanup() {
    bash "$root/scripts/pg.sh" stop "$pg"
}
database_url="$(bash "$root/scripts/pg.sh" start "$pg")"
replica_urls=()
for i in 1 2; do
    p="$(free_port)"
    DATABASE_URL="$database_url" "$bin" serve --config "$work/wasmhub.toml" --listen "127.0.0.1:$p" \
        --data "$work/data-r$i" --set storage.backend=postgres >"$work/r$i.log" 2>&1 &
    pids+=($!)
    replica_urls+=("http://127.0.0.1:$p")
    wait_health "http://127.0.0.1:$p" "$work/r$i.log"
done
HUB_URL="$hub" RECEIVER_URL="$receiver" UPSTREAM_URL="$upstream" R1_URL="${replica_urls[0]}" \
    R2_URL="${replica_urls[1]}" "$python" "$here/check.py" replicas || status=1

# A collector that is down: calls answer as before, and their spans are counted
# as dropped (waiting for the counter, bounded).
stop_pids "$receiver_pid"
dropped() {
    curl -fsS "$hub/metrics" | awk '/^wasmhub_telemetry_spans_dropped_total\{/ {n += $2} END {print n + 0}'
}
before="$(dropped)"
for i in 1 2 3; do
    curl -fsS -X POST "$hub/api/hub/call" -H 'content-type: application/json' \
        -d "{\"calls\":[{\"tool\":\"calc.eval\",\"input\":{\"expression\":\"$i+1\"}}]}" | grep -q '"ok":true' \
        || { echo "not ok - otel: a call with the collector down"; status=1; }
done
moved=""
now="$before"
for _ in $(seq 300); do
    now="$(dropped)"
    if [ "$now" -gt "$before" ]; then
        moved=yes
        break
    fi
    sleep 0.1
done
if [ -n "$moved" ]; then
    echo "ok - otel: with the collector down, calls answer and wasmhub_telemetry_spans_dropped_total moves ($before -> $now)"
else
    echo "not ok - otel: the drop counter did not move with the collector down (still $before)"
    status=1
fi

# The receiver comes back on its port: the hub's probe finds it, and spans of new
# calls arrive again (a call with a known trace id until one of its spans is there).
"$python" "$here/receiver.py" receiver "${receiver##*:}" >"$work/receiver2.url" 2>>"$work/receiver.log" &
pids+=($!)
trace="4bf92f3577b34da6a3ce929d0e0e47$(printf '%02x' $((RANDOM % 256)))"
back=""
for _ in $(seq 300); do
    curl -fsS -X POST "$hub/api/hub/call" -H 'content-type: application/json' \
        -H "traceparent: 00-$trace-00f067aa0ba902b7-01" \
        -d '{"calls":[{"tool":"calc.eval","input":{"expression":"2+2"}}]}' >/dev/null || true
    if curl -fsS "$receiver/spans" 2>/dev/null | grep -q "$trace"; then
        back=yes
        break
    fi
    sleep 0.1
done
if [ -n "$back" ]; then
    echo "ok - otel: the receiver back on its port gets spans again (the exporter's probe found it)"
else
    echo "not ok - otel: no span reached the receiver after it came back"
    status=1
fi
if [ "$status" -ne 0 ]; then
    echo "--- hub log"
    tail -n 40 "$work/hub.log"
    echo "--- receiver log"
    tail -n 20 "$work/receiver.log"
fi
exit "$status"
