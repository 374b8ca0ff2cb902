#!/usr/bin/env bash
# MCP load benchmark: `tools/call` of `hub_call` over loopback, stateless 2026-07-28
# revision (one self-contained POST per call, no session), against the release
# binary. Two operations on one hub: `adversary.echo` (the trivial echo operation of
# the test guest, what wassette's reference figure used) and `calc.eval "1+1"` (the
# smallest example plugin, which parses, computes exactly and formats).
# wrk drives 1, 16 and 64 connections; the 1-connection run is a sequential client,
# whose p50 is the sequential median. Prints one line per run. All the example
# plugins are loaded (Rust, Python and JavaScript ones), and the hub's resident
# memory is printed after the load and after the runs (each after the allocator's
# 1 s purge), split into anonymous memory (heap, instance slots) and file-backed
# pages (the binary and the mapped compiled plugins, shared with the page cache),
# with the peak (VmHWM), and PSS: several warm instance slots can map one plugin's
# memory image from its compiled file, and RSS counts such a page once per mapping,
# PSS once. After each sequential run it prints where one call's time went, stage
# by stage, from the hub's own wasmhub_stage_* counters, beside the round trip of the
# transport floor (host/examples/http_floor.rs: hyper built as the hub's listener is,
# answering the hub's own answer bytes without doing any work), run right after it
# with the same client.
#   usage: bench/mcp.sh [seconds per run, default 10]
#   WASMHUB_BIN=path runs that binary instead of building target/release/wasmhub;
#   FLOOR_BIN=path that floor instead of building target/release/examples/http_floor.
#   HUB_ARGS="--set limits.warm_slots=8 ..." passes more arguments to `wasmhub serve`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
duration="${1:-10}"

# shellcheck source=bench/setup.sh
source bench/setup.sh
floor_bin="${FLOOR_BIN:-}"
if [ -z "$floor_bin" ]; then
    cargo build --release -p wasmhub --example http_floor
    floor_bin=target/release/examples/http_floor
fi
floor_pid=""
bench_stop() {
    if [ -n "$floor_pid" ]; then kill "$floor_pid" 2>/dev/null || true; fi
}
floor_port="$(free_port)"

mkdir -p "$work/plugins"
cp dist/plugins/*.wasm dist/plugins/*.toml target/test-guests/adversary.wasm "$work/plugins/"
cat > "$work/bench.toml" <<EOF
plugins_dir = "$work/plugins"
data_dir = "$work/data"
EOF
# start_hub: runs the hub in the background (into $hub_pid) until every plugin has loaded.
start_hub() {
    # shellcheck disable=SC2086 # HUB_ARGS is a list of words on purpose
    WASMHUB_LOG=warn "$bin" serve --config "$work/bench.toml" --listen "127.0.0.1:$port" ${HUB_ARGS:-} \
        >>"$work/hub.log" 2>&1 &
    hub_pid=$!
    for _ in $(seq 1 600); do
        curl -fsS "http://127.0.0.1:$port/health" 2>/dev/null | grep -q '"status":"ok"' && break
        sleep 0.2
    done
}
start_hub

# memory LABEL: the hub's resident memory now, after 3 s of quiet (jemalloc's
# background thread purges pages unused for 1 s).
memory() {
    sleep 3
    awk -v label="$1" '
        /^Rss:/ { rss = $2 } /^Pss:/ { pss = $2 } /^Pss_Anon:/ { anon = $2 } /^Pss_File:/ { file = $2 }
        END { printf "memory %-26s RSS %6.1f MB (anonymous %6.1f MB, file-backed %6.1f MB; PSS %6.1f MB)\n",
              label, rss / 1024, anon / 1024, file / 1024, pss / 1024 }' "/proc/$hub_pid/smaps_rollup" |
        tee -a "$work/summary"
}
plugins="$(curl -fsS "http://127.0.0.1:$port/health" | python3 -c 'import json,sys; print(json.load(sys.stdin)["plugins"]["active"])')"

meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'

# cpu_ticks: the hub's CPU time so far (user + system, its sockets' kernel work included), in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$hub_pid/stat"; }

# bench LABEL CALL_JSON: checks the call succeeds, then times it at 1, 16 and 64 connections,
# each timed run's line ending with the hub's CPU microseconds per call over it (hub_cpu_us).
bench() {
    local label=$1 call=$2
    local body="{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"hub_call\",\"arguments\":{\"calls\":[$call]},$meta}}"
    local answer=""
    # The plugins load in the background: retry until the operation answers.
    for _ in $(seq 1 300); do
        answer="$(curl -sS "http://127.0.0.1:$port/mcp" -H 'content-type: application/json' \
            -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2026-07-28' \
            -H 'mcp-method: tools/call' -H 'mcp-name: hub_call' -d "$body" || true)"
        echo "$answer" | grep -q '"ok":true' && break
        sleep 0.2
    done
    echo "$answer" | grep -q '"ok":true' || { echo "the benchmark call fails: $answer" >&2; exit 1; }
    # Two scripts: call.lua only sends (the shape of the reference measurement: a Lua
    # script for the JSON-RPC body); checked.lua also reads every answer in Lua. wrk
    # shares the two cores with the hub, and a Lua call per response costs wrk enough
    # CPU to lower the hub's figure by several percent, so each step first checks
    # every answer of a one-second run (which also warms the instance pool and
    # caches), then times the send-only script.
    cat > "$work/call.lua" <<EOF
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "hub_call"

function init(args)
    bad = 0
end

dofile("$root/bench/wrk-report.lua")
EOF
    cp "$work/call.lua" "$work/checked.lua"
    cat >> "$work/checked.lua" <<'EOF'

function response(status, headers, body)
    if status ~= 200 or not string.find(body, '"ok":true', 1, true) then
        bad = bad + 1
    end
end
EOF
    echo "$label"
    for conns in 1 16 64; do
        local threads=$((conns < 2 ? 1 : 2)) line checked floor cpu
        checked="$(wrk -t"$threads" -c"$conns" -d1s -s "$work/checked.lua" "http://127.0.0.1:$port/mcp" | grep RESULT)"
        case "$checked" in
            *" errors=0") ;;
            *) echo "wrong answers under load: $checked" >&2; exit 1 ;;
        esac
        curl -fsS "http://127.0.0.1:$port/metrics" >"$work/before.prom"
        cpu="$(cpu_ticks)"
        line="$(wrk -t"$threads" -c"$conns" -d"${duration}s" -s "$work/call.lua" "http://127.0.0.1:$port/mcp" | grep RESULT)"
        line="$line hub_cpu_us=$(awk -v before="$cpu" -v after="$(cpu_ticks)" -v hz="$(getconf CLK_TCK)" -v line="$line" \
            'BEGIN { match(line, /requests=[0-9]+/); calls = substr(line, RSTART + 9, RLENGTH - 9)
                     printf "%.1f", (after - before) / hz * 1e6 / (calls > 0 ? calls : 1) }')"
        curl -fsS "http://127.0.0.1:$port/metrics" >"$work/after.prom"
        echo "  connections=$conns ${line#RESULT }$([ "$conns" -eq 1 ] && echo ' (sequential client)')"
        echo "run ${label%% *} connections=$conns ${line#RESULT }" >>"$work/summary"
        echo "    checked 1 s run: ${checked#RESULT }"
        if [ "$conns" -eq 1 ]; then
            floor_run "$answer" >"$work/floor.out" # not in $(…): bench_stop must see floor_pid
            floor="$(cat "$work/floor.out")"
            echo "floor ${label%% *} ${floor#RESULT }" >>"$work/summary"
            stages "$work/before.prom" "$work/after.prom" "$line" "$floor"
        fi
    done
}

# floor_run ANSWER: the wrk result of the floor answering ANSWER's bytes to the same
# sequential client for the same time.
floor_run() {
    printf '%s' "$1" >"$work/answer.json"
    "$floor_bin" "127.0.0.1:$floor_port" "$work/answer.json" >>"$work/floor.log" 2>&1 &
    floor_pid=$!
    for _ in $(seq 1 100); do
        curl -fsS "http://127.0.0.1:$floor_port/mcp" -d '{}' >/dev/null 2>&1 && break
        sleep 0.1
    done
    curl -fsS "http://127.0.0.1:$floor_port/mcp" -d '{}' >/dev/null ||
        { echo "the floor does not answer: $(cat "$work/floor.log")" >&2; exit 1; }
    wrk -t1 -c1 -d"${duration}s" -s "$work/call.lua" "http://127.0.0.1:$floor_port/mcp" | grep RESULT
    kill "$floor_pid"
    wait "$floor_pid" 2>/dev/null || true
    floor_pid=""
}

# stages BEFORE AFTER WRK_RESULT FLOOR_RESULT: where one sequential call's time went,
# from the hub's wasmhub_stage_* counters (`host/src/timing.rs`) scraped around the run:
# each stage's wall time per call, the rest of the router's time, and the time
# outside the router (hyper's framing, the kernel's loopback, wrk) from the mean
# round trip (1 / calls per second on one connection); then the floor's round trip
# and how much longer the hub's is.
stages() {
    python3 - "$@" <<'PY'
import re, sys
def read(path):
    totals = {}
    for line in open(path):
        m = re.match(r'wasmhub_stage_(seconds|runs)_total\{stage="(\w+)"\} (\S+)', line)
        if m:
            totals[(m[1], m[2])] = float(m[3])
    return totals
before, after = read(sys.argv[1]), read(sys.argv[2])
delta = lambda kind, stage: after[(kind, stage)] - before[(kind, stage)]
calls = delta("runs", "request") - 1  # the first scrape counts its own request after it
rate = float(re.search(r"calls/s=(\S+)", sys.argv[3])[1])
us = lambda stage: delta("seconds", stage) / calls * 1e6
router = ["read_body", "parse_body", "invoke", "encode"]
call = ["checks", "instantiate", "guest", "teardown", "output", "record"]
round_trip = 1e6 / rate
row = lambda label, value: print(f"      {label:<52} {value:8.1f}")
print(f"    where one sequential call's time goes (mean over {calls:.0f} calls, microseconds):")
row("round trip (1 / calls per second)", round_trip)
row("  in the router (stage request)", us("request"))
for stage in router:
    row("    " + stage, us(stage))
    if stage == "invoke":
        for inner in call:
            row("      " + inner, us(inner))
        row("      the hub around the call (snapshot, batch)", us("invoke") - sum(us(s) for s in call))
row("    the rest (auth, the MCP envelope and dispatch)", us("request") - sum(us(s) for s in router))
row("  outside (hyper, kernel loopback, wrk)", round_trip - us("request"))
floor = 1e6 / float(re.search(r"calls/s=(\S+)", sys.argv[4])[1])
row("floor: round trip of hyper answering these bytes", floor)
row("the hub's round trip above the floor", round_trip - floor)
PY
}

# summary FILE: the runs and memory figures in one table, beside issue #20's
# targets (the ratios to wassette come from bench/vs-wassette.sh).
summary() {
    python3 - "$1" <<'PY'
import re, sys
runs, memory, floors = {}, {}, {}
for line in open(sys.argv[1]):
    if line.startswith("floor "):
        _, op, rest = line.split(maxsplit=2)
        floors[op] = float(re.search(r"calls/s=(\S+)", rest)[1])
    elif line.startswith("run "):
        _, op, rest = line.split(maxsplit=2)
        fields = dict(re.findall(r"(\S+)=(\S+)", rest))
        runs.setdefault(op, {})[int(fields["connections"])] = fields
    elif line.startswith("memory "):
        label, rss = re.match(r"memory (.+?)\s+RSS\s+(\S+) MB", line).groups()
        memory[label] = float(rss)
print("\nsummary")
print(f"  {'operation':<16} {'1 conn calls/s':>14} {'p50 ms':>7} {'us/call':>8} {'16 conn':>8} {'64 conn':>8}"
      f" {'hub CPU us/call at 1/16/64':>27}")
for op, by in runs.items():
    one = by[1]
    cpu = "/".join(by[c].get("hub_cpu_us", "-") for c in (1, 16, 64))
    print(f"  {op:<16} {float(one['calls/s']):>14.0f} {float(one['p50_ms']):>7.3f} "
          f"{1e6 / float(one['calls/s']):>8.1f} {float(by[16]['calls/s']):>8.0f} {float(by[64]['calls/s']):>8.0f}"
          f" {cpu:>27}")
echo = runs.get("adversary.echo", {}).get(1)
if echo:
    per_call = 1e6 / float(echo["calls/s"])
    print(f"  sequential echo: {per_call:.1f} us per call, target <= 80 us: {'met' if per_call <= 80 else 'not met'}")
    floor = 1e6 / floors["adversary.echo"]
    print(f"    the floor (hyper, no work): {floor:.1f} us per call; the target leaves {80 - floor:.1f} us "
          f"for the hub's work, which takes {per_call - floor:.1f} us")
after = memory.get("after the runs")
if after is not None:
    print(f"  resident memory after the runs: {after:.1f} MB, target <= 50 MB: {'met' if after <= 50 else 'not met'}")
for label, rss in memory.items():
    print(f"  memory {label}: {rss:.1f} MB")
PY
}

echo "MCP tools/call hub_call, 2026-07-28 stateless, ${duration}s per run, $(nproc) cores shared with wrk, load $(cut -d' ' -f1-3 /proc/loadavg)"
memory "after compiling $plugins plugins"
# A restart loads the plugins from the compiled cache, as a running deployment does;
# the runs below measure that hub.
kill "$hub_pid"
wait "$hub_pid" 2>/dev/null || true
start_hub
memory "after a restart"
bench "adversary.echo (trivial)" '{"tool":"adversary.echo","input":{"text":"hi"}}'
bench "calc.eval 1+1" '{"tool":"calc.eval","input":{"expression":"1+1"}}'
memory "after the runs"
awk '/^VmHWM:/ { printf "memory %-26s RSS %6.1f MB\n", "peak since the restart", $2 / 1024 }' "/proc/$hub_pid/status" |
    tee -a "$work/summary"
summary "$work/summary"
