#!/usr/bin/env bash
# Scale-out benchmark, side by side in one run: the release binary (built with the
# postgres feature) on
#   sled, 1 replica                 (the default store; the reference)
#   postgres, 1 replica             (the same hub on PostgreSQL: the store's cost)
#   postgres, 1 replica + HAProxy   (the balancer's cost)
#   postgres, 3 replicas + HAProxy  (round robin over three replicas on one database)
# PostgreSQL is a throwaway server on loopback (scripts/pg.sh) with its durable
# defaults (fsync, synchronous_commit on), as sled flushes too; HAProxy is Debian's.
# For each set-up, with wrk (as bench/mcp.sh):
#   hub_call   POST /api/hub/call of calc.eval "1+1" at 64 connections: calls/s, p50,
#              p99 (each call also writes its audit record);
#   chat turn  POST /api/chat, one-step turns in new sessions, against a scripted
#              model that answers at once (tests/replicas/upstream.mjs): latency at 1
#              connection (the hub's overhead per turn: lease, session load and save,
#              the live-turn bus) and turns/s at 8 connections.
# The scripted model's own latency (wrk on it directly) is printed as the baseline
# the turn latency includes. Everything runs on the same machine as wrk: compare the
# rows with each other, not with another machine's.
#   usage: bench/replicas.sh [seconds per run, default 10]
#   WASMHUB_BIN=path runs that binary instead of building it (it must have the
#   postgres feature).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
duration="${1:-10}"

if [ -z "${WASMHUB_BIN:-}" ]; then
    cargo build --release -p wasmhub --features postgres
    export WASMHUB_BIN=target/release/wasmhub
fi
# shellcheck source=bench/setup.sh
source bench/setup.sh
if ! command -v haproxy >/dev/null; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        haproxy; } >/dev/null
fi

# shellcheck source=scripts/loopback.sh
source scripts/loopback.sh
pg="$(mktemp -d)"
pids=()
stop_set() { # the hubs and the balancer of the current set-up
    # One that does not stop is killed and named: the figures stand, the shutdown
    # is a bug to report.
    stop_pids "${pids[@]}"
    pids=()
}
upstream_pid=""
bench_stop() {
    stop_set
    if [ -n "$upstream_pid" ]; then
        kill "$upstream_pid" 2>/dev/null || true
        wait "$upstream_pid" 2>/dev/null || true
    fi
    bash scripts/pg.sh stop "$pg"
}

database_url="$(bash scripts/pg.sh start "$pg" -c fsync=on -c synchronous_commit=on -c full_page_writes=on)"
start_upstream node "$work"

mkdir "$work/plugins"
cp dist/plugins/calc.wasm "$work/plugins/"
"$bin" plugin lock "$work/plugins" >/dev/null
cat >"$work/bench.toml" <<EOF
plugins_dir = "$work/plugins"

[[providers]]
name = "scripted"
base_url = "$upstream"
models = ["scripted-*"]
max_retries = 0

[agent]
model = "scripted/scripted-1"
EOF

# start_set BACKEND REPLICAS BALANCER(yes|no): starts the set-up (into $pids); its
# URL goes to $url.
start_set() {
    local backend=$1 n=$2 balancer=$3 servers=""
    for i in $(seq 1 "$n"); do
        local p
        p="$(free_port)"
        DATABASE_URL="$database_url" WASMHUB_LOG=warn "$bin" serve --config "$work/bench.toml" --locked \
            --listen "127.0.0.1:$p" --data "$work/data-$backend-$n-$i" --set "storage.backend=$backend" \
            >>"$work/hub-$i.log" 2>&1 &
        pids+=($!)
        url="http://127.0.0.1:$p"
        wait_health "$url" "$work/hub-$i.log"
        servers+="    server r$i 127.0.0.1:$p"$'\n'
    done
    if [ "$balancer" = yes ]; then
        local lb
        lb="$(free_port)"
        cat >"$work/haproxy.cfg" <<CFG
global
    maxconn 4096
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
frontend hub
    bind 127.0.0.1:$lb
    default_backend replicas
backend replicas
    balance roundrobin
$servers
CFG
        haproxy -db -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 &
        pids+=($!)
        url="http://127.0.0.1:$lb"
        wait_health "$url" "$work/haproxy.log"
    fi
}

cat >"$work/call.lua" <<'EOF'
wrk.method = "POST"
wrk.body = '{"calls":[{"tool":"calc.eval","input":{"expression":"1+1"}}]}'
wrk.headers["Content-Type"] = "application/json"
EOF
# Every request a new session ("thanks" is a one-step turn of the scripted model),
# named by the run's start, the thread and a counter.
cat >"$work/turn.lua" <<'EOF'
local counter = 0
local prefix = ""
function init(args)
    bad = 0
    prefix = string.format("b%d-%d", os.time(), tid)
end
function request()
    counter = counter + 1
    local body = string.format('{"id":"%s-%d","trigger":"submit-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"thanks"}]}]}', prefix, counter)
    return wrk.format("POST", "/api/chat", { ["Content-Type"] = "application/json" }, body)
end
function response(status, headers, body)
    if status ~= 200 or not string.find(body, "welcome", 1, true) then
        bad = bad + 1
    end
end
EOF
cat >"$work/model.lua" <<'EOF'
wrk.method = "POST"
wrk.body = '{"model":"scripted-1","stream":true,"messages":[{"role":"user","content":"thanks"}]}'
wrk.headers["Content-Type"] = "application/json"
EOF
# Every script ends with the shared reporter: wrong answers (counted in `bad` by a
# script's response()) and non-2xx answers count as errors.
for script in call turn model; do
    echo "dofile(\"$root/bench/wrk-report.lua\")" >>"$work/$script.lua"
done

# run CONNECTIONS SCRIPT URL: "rate p50 p99 errors".
run() {
    local threads=$(($1 < 2 ? 1 : 2)) line
    line="$(wrk -t"$threads" -c"$1" -d"${duration}s" -s "$2" "$3" | grep RESULT)"
    read -r rate p50 p99 _ errors <<<"$(echo "${line#RESULT }" | sed -E 's/[a-z_/0-9]+=//g')"
    echo "$rate $p50 $p99 $errors"
}

printf 'replicas benchmark: %ss per run, %s cores shared with wrk, load %s\n' "$duration" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
read -r rate p50 _ _ <<<"$(run 1 "$work/model.lua" "$upstream/chat/completions")"
printf 'scripted model alone (the floor of a turn): p50 %s ms at 1 connection (%s/s)\n\n' "$p50" "$rate"
printf '%-32s | %-30s | %-27s\n' "" "hub_call, 64 connections" "chat turn"
printf '%-32s | %10s %9s %9s | %12s %14s\n' "set-up" "calls/s" "p50 ms" "p99 ms" "p50 ms (1c)" "turns/s (8c)"
for setup in "sled 1 no" "postgres 1 no" "postgres 1 yes" "postgres 3 yes"; do
    read -r backend n balancer <<<"$setup"
    start_set "$backend" "$n" "$balancer"
    # A short warm-up: instance pools, connection pools, caches.
    wrk -t1 -c4 -d1s -s "$work/call.lua" "$url/api/hub/call" >/dev/null
    read -r calls call_p50 call_p99 call_errors <<<"$(run 64 "$work/call.lua" "$url/api/hub/call")"
    read -r _ turn_p50 _ turn_errors <<<"$(run 1 "$work/turn.lua" "$url")"
    read -r turns _ _ turns_errors <<<"$(run 8 "$work/turn.lua" "$url")"
    label="$backend, $n replica"
    [ "$n" -eq 1 ] || label+="s"
    [ "$balancer" = no ] || label+=" + HAProxy"
    printf '%-32s | %10s %9s %9s | %12s %14s\n' "$label" "$calls" "$call_p50" "$call_p99" "$turn_p50" "$turns"
    if [ "$call_errors" != 0 ] || [ "$turn_errors" != 0 ] || [ "$turns_errors" != 0 ]; then
        echo "  errors: hub_call $call_errors, turns $turn_errors (1c) $turns_errors (8c)" >&2
    fi
    stop_set
done
