#!/usr/bin/env bash
# Telemetry overhead with the collector down (issue #38): `hub_call` throughput and
# p99 of `calc.eval "1+1"` through `POST /api/hub/call` (wrk, 16 connections) on
# two hubs of the release binary started side by side from the same configuration,
# one without `[telemetry]` (off) and one exporting every span (sample_ratio 1) to
# an OTLP endpoint nobody listens on (down: the stopped receiver), measured in
# alternating rounds (the machine's load drifts; alternating spreads it over both).
# Prints each round, the median calls/s and p99 of each, their ratio, and the
# down hub's wasmhub_telemetry_spans_dropped_total (all reasons) before and after (it must move:
# spans were started and counted as dropped, not skipped). Exits 1 if the drop counter did
# not move or a run had errors.
#   usage: bench/otel.sh [seconds per measurement, default 5] [rounds, default 5]
#   WASMHUB_BIN=path runs that binary instead of building target/release/wasmhub.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
duration="${1:-5}"
rounds="${2:-5}"

# shellcheck source=bench/setup.sh
source bench/setup.sh
down_pid=""
bench_stop() {
    if [ -n "$down_pid" ]; then
        kill "$down_pid" 2>/dev/null || true
        wait "$down_pid" 2>/dev/null || true
    fi
}
mkdir "$work/plugins"
cp dist/plugins/calc.wasm "$work/plugins/"
# Nothing listens on the collector's port: every export is refused at once (the
# receiver was stopped).
collector_port="$(free_port)"
port_down="$(free_port)"
cat > "$work/off.toml" <<EOF
plugins_dir = "$work/plugins"
data_dir = "$work/data-off"
EOF
cat > "$work/down.toml" <<EOF
plugins_dir = "$work/plugins"
data_dir = "$work/data-down"

[telemetry]
otlp_endpoint = "http://127.0.0.1:$collector_port"
EOF
WASMHUB_LOG=warn "$bin" serve --config "$work/off.toml" --listen "127.0.0.1:$port" >"$work/off.log" 2>&1 &
hub_pid=$!
WASMHUB_LOG=warn "$bin" serve --config "$work/down.toml" --listen "127.0.0.1:$port_down" >"$work/down.log" 2>&1 &
down_pid=$!
wait_health "http://127.0.0.1:$port" "$work/off.log"
wait_health "http://127.0.0.1:$port_down" "$work/down.log"

cat > "$work/call.lua" <<EOF
wrk.method = "POST"
wrk.body = '{"calls":[{"tool":"calc.eval","input":{"expression":"1+1"}}]}'
wrk.headers["Content-Type"] = "application/json"
dofile("$root/bench/wrk-report.lua")
EOF
dropped() {
    curl -fsS "http://127.0.0.1:$port_down/metrics" |
        awk '/^wasmhub_telemetry_spans_dropped_total\{/ {n += $2} END {print n + 0}'
}
measure() { # measure PORT: "calls/s p99_ms errors"
    local line
    line="$(wrk -t2 -c16 -d"${duration}s" --timeout 30s -s "$work/call.lua" "http://127.0.0.1:$1/api/hub/call" | grep RESULT)"
    echo "$line" | sed -E 's/.*calls\/s=([0-9.]+) p50_ms=[0-9.]+ p99_ms=([0-9.]+) requests=[0-9]+ errors=([0-9]+)/\1 \2 \3/'
}
# Warm both (instance pool, allocator) before measuring.
measure "$port" >/dev/null
measure "$port_down" >/dev/null
before="$(dropped)"
printf '%-6s %-5s %10s %9s\n' round hub calls/s p99_ms
off_rps=() off_p99=() down_rps=() down_p99=() errors=0
for r in $(seq 1 "$rounds"); do
    for which in off down; do
        p="$port"
        [ "$which" = down ] && p="$port_down"
        read -r rps p99 errs <<<"$(measure "$p")"
        errors=$((errors + errs))
        printf '%-6s %-5s %10s %9s\n' "$r" "$which" "$rps" "$p99"
        if [ "$which" = off ]; then off_rps+=("$rps"); off_p99+=("$p99"); else down_rps+=("$rps"); down_p99+=("$p99"); fi
    done
done
after="$(dropped)"
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
mo="$(median "${off_rps[@]}")" md="$(median "${down_rps[@]}")"
po="$(median "${off_p99[@]}")" pd="$(median "${down_p99[@]}")"
echo
echo "median calls/s: off $mo, collector down $md (ratio $(awk -v a="$md" -v b="$mo" 'BEGIN {printf "%.3f", a / b}'))"
echo "median p99 ms:  off $po, collector down $pd (ratio $(awk -v a="$pd" -v b="$po" 'BEGIN {printf "%.3f", a / b}'))"
echo "spans dropped on the down hub: $before -> $after"
echo "load average: $(cut -d" " -f1-3 /proc/loadavg)"
status=0
[ "$errors" -eq 0 ] || { echo "wrk saw $errors errors" >&2; status=1; }
awk -v a="$after" -v b="$before" 'BEGIN {exit !(a > b)}' || { echo "the drop counter did not move" >&2; status=1; }
exit "$status"
