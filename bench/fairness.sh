#!/usr/bin/env bash
# Fairness benchmark (issue 14): benign `calc.eval "1+1"` latency through
# `POST /api/hub/call`, alone and while other clients attack the hub, measured side
# by side in one run against the release binary on loopback:
#   idle       nothing else runs;
#   pool-slow  a second client (one token) asks for more slots than the whole
#              instance pool with `adversary.slow` calls (batches of 32 sleeping
#              calls on 8 connections): it holds its token's share of the pool
#              (limits.caller_share_percent, by default 50%: 128 of the 256 slots),
#              its calls past the share are refused, and the rest of the pool stays
#              free for the other tokens. (Two attacking tokens could fill the whole
#              pool, and then every token's calls are refused by design: the pool is
#              the bound of last resort, not a fairness mechanism.)
#   pool-spin  the same with `adversary.spin` (guests that burn CPU until timeout_ms);
#   big-input  4 clients post ~300 KB inputs with thousands of schema violations
#              to calc.eval.
# and the same within one principal (issue 39: most hubs run with one token, or
# none), the attacker using the benign client's own token:
#   same-slow  `adversary.slow` batches as in pool-slow: adversary holds slots of
#              the token's share (up to its part, limits.caller_plugin_share_percent,
#              and what it may borrow past it, leaving limits.caller_reserve_percent
#              free), while the benign client calls calc;
#   same-spin  4 clients keep 32 spinning calls each running: the token's running
#              permits go to calc's line and adversary's line in turn;
#   same-input big-input on the benign token.
# Otherwise each client has its own token (so the caller shares apply as in
# production). The scenarios alternate within each round (the machine's load
# drifts; alternating spreads it over all of them). Each starts from a drained hub:
# after a measurement the attackers are stopped and the run waits until /metrics
# shows no call and no REST request in flight (it fails, naming the scenario, if
# they do not end); an attack counts as engaged once /metrics shows it (its calls
# in flight, or its large inputs parsed), not after a pause. The table shows the
# median over rounds of each round's p50/p99, the ratio attack-p99 / idle-p99
# (target <= 3x) and the attack's calls in flight while the benign client ran. The
# exit status is 1 when a scenario misses the target (named on stderr).
# The benign side is wrk with one connection (a sequential client: every stalled
# call shows in its latency). The attackers are bounded Python clients (a fixed
# number of connections, stopped after the measurement), loopback only. They run
# at nice 19 (ATTACK_NICE=N to change it): they stand for clients on other
# machines, and on one small machine they would otherwise take the cores from
# the hub and wrk by themselves, which no scheduling inside the hub can change.
#   usage: bench/fairness.sh [seconds per measurement, default 5] [rounds, default 3]
#   WASMHUB_BIN=path runs that binary instead of building target/release/wasmhub;
#   WASMHUB_BIN_B=path also runs a second hub with that binary, for an A/B in one
#     run: every scenario is measured on both hubs, in an order that alternates by
#     round, and the table has a row per hub and scenario and the B/A ratio of the
#     p99 medians (each hub's ratio to idle is to its own idle);
#   EPOCH_TICK_US=N runs the hubs with limits.epoch_tick_us = N;
#   BUSY_NICE=N with limits.busy_nice = N (0: busy tokens' work at normal priority),
#     BUSY_NICE_B=N hub B only (an A/B of the setting with one binary);
#   LIMITS_B="key = value" adds that line to hub B's [limits] (any other setting's A/B).
#   SCENARIOS="idle same-spin" runs only those (idle first: the ratios need it).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
duration="${1:-5}"
rounds="${2:-3}"
attack_nice="${ATTACK_NICE:-19}"
# Only calc and the adversary guest are needed (bench/setup.sh).
bench_plugins=calc

# shellcheck source=bench/setup.sh
source bench/setup.sh
attack_pid=""
hub_b_pid=""
# The running attack client, stopped after each measurement and on exit (and the
# second hub, on exit).
bench_stop() {
    if [ -n "$attack_pid" ]; then
        kill "$attack_pid" 2>/dev/null || true
        wait "$attack_pid" 2>/dev/null || true
        attack_pid=""
    fi
}
trap 'bench_stop; if [ -n "$hub_b_pid" ]; then kill "$hub_b_pid" 2>/dev/null || true; wait "$hub_b_pid" 2>/dev/null || true; fi; bench_cleanup' EXIT

mkdir -p "$work/plugins"
cp dist/plugins/calc.wasm target/test-guests/adversary.wasm "$work/plugins/"
export BENCH_TOKEN_BENIGN="benign-$RANDOM$RANDOM" BENCH_TOKEN_POOL="pool-$RANDOM$RANDOM" \
    BENCH_TOKEN_INPUT="input-$RANDOM$RANDOM"
# extra_limits NAME: hub NAME's limits.busy_nice line (BUSY_NICE, or BUSY_NICE_B for hub B)
# and its extra [limits] lines (LIMITS_B for hub B).
extra_limits() {
    local n="${BUSY_NICE:-}"
    if [ "$1" = B ] && [ -n "${BUSY_NICE_B:-}" ]; then n=$BUSY_NICE_B; fi
    if [ -n "$n" ]; then printf 'busy_nice = %s\n' "$n"; fi
    if [ "$1" = B ] && [ -n "${LIMITS_B:-}" ]; then printf '%s\n' "$LIMITS_B"; fi
}
# hub_config NAME: the config of hub NAME (its own data folder).
hub_config() {
    cat <<CONF
plugins_dir = "$work/plugins"
data_dir = "$work/data-$1"
[limits]
$([ -n "${EPOCH_TICK_US:-}" ] && printf 'epoch_tick_us = %s\n' "$EPOCH_TICK_US")
$(extra_limits "$1")

[[tokens]]
name = "benign"
secret_env = "BENCH_TOKEN_BENIGN"
allow = ["*"]

[[tokens]]
name = "pool"
secret_env = "BENCH_TOKEN_POOL"
allow = ["*"]

[[tokens]]
name = "input"
secret_env = "BENCH_TOKEN_INPUT"
allow = ["*"]
CONF
}
hub_config A >"$work/A.toml"
WASMHUB_LOG=warn "$bin" serve --config "$work/A.toml" --listen "127.0.0.1:$port" \
    >"$work/A.log" 2>&1 &
hub_pid=$!
hubs=(A)
declare -A hub_port=([A]=$port) hub_proc=([A]=$hub_pid) hub_bin=([A]=$bin)
if [ -n "${WASMHUB_BIN_B:-}" ]; then
    port_b="$(free_port)"
    hub_config B >"$work/B.toml"
    WASMHUB_LOG=warn "$WASMHUB_BIN_B" serve --config "$work/B.toml" --listen "127.0.0.1:$port_b" \
        >"$work/B.log" 2>&1 &
    hub_b_pid=$!
    hubs=(A B)
    hub_port[B]=$port_b hub_proc[B]=$hub_b_pid hub_bin[B]=$WASMHUB_BIN_B
fi

calc='{"calls":[{"tool":"calc.eval","input":{"expression":"1+1"}}]}'
call() { # call PORT TOKEN BODY: the answer of POST /api/hub/call
    curl -sS "http://127.0.0.1:$1/api/hub/call" -H "authorization: Bearer $2" -H 'content-type: application/json' -d "$3" || true
}
# metric PORT SERIES: the value of SERIES (name and labels as printed) on /metrics, 0 if absent.
metric() {
    curl -sS "http://127.0.0.1:$1/metrics" -H "authorization: Bearer $BENCH_TOKEN_BENIGN" 2>/dev/null |
        awk -v s="$2" '$1 == s { print $2; found = 1 } END { if (!found) print 0 }'
}
in_flight() { metric "$1" wasmhub_calls_in_flight; }
rest_in_flight() { metric "$1" 'wasmhub_surface_in_flight{surface="rest"}'; }
# wait_until WHAT TEST...: re-runs TEST (reading /metrics) until it holds; after
# 60 s the run fails, naming WHAT. Polling the gauges is the only way a shell
# client can wait for them; the 50 ms between reads adds nothing to a measurement.
wait_until() {
    local what=$1
    shift
    for _ in $(seq 1 1200); do
        "$@" && return 0
        sleep 0.05
    done
    echo "fairness: gave up waiting for $what" >&2
    exit 1
}
# The plugins load in the background: wait until calc.eval and adversary.slow answer.
answers() {
    call "$1" "$BENCH_TOKEN_BENIGN" "$calc" | grep -q '"ok":true' &&
        call "$1" "$BENCH_TOKEN_POOL" '{"calls":[{"tool":"adversary.slow","input":{"ms":1}}]}' | grep -q '"ok":true'
}
for h in "${hubs[@]}"; do
    kill -0 "${hub_proc[$h]}" || { cat "$work/$h.log" >&2; exit 1; }
    wait_until "hub $h's plugins to load" answers "${hub_port[$h]}"
done

# The attack clients: bounded connections, each posting in a loop until killed.
cat > "$work/attack.py" <<'EOF'
import asyncio, json, sys

mode, port, token, conns = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
if mode in ("slow", "spin"):
    op = {"slow": {"tool": "adversary.slow", "input": {"ms": 2000}},
          "spin": {"tool": "adversary.spin", "input": {}}}[mode]
    body = {"calls": [op] * 32}
else:
    # ~300 KB: thousands of unknown properties and wrong types on calc.eval.
    inp = {f"field_{i:05}": "x" * 20 for i in range(9000)}
    inp.update({"expression": 12, "digits": "many"})
    body = {"calls": [{"tool": "calc.eval", "input": inp}]}
payload = json.dumps(body).encode()
head = (f"POST /api/hub/call HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n").encode()

async def client():
    while True:
        try:
            r, w = await asyncio.open_connection("127.0.0.1", port)
            w.write(head + payload)
            await w.drain()
            await r.read()
            w.close()
        except OSError:
            await asyncio.sleep(0.05)

async def main():
    await asyncio.gather(*(client() for _ in range(conns)))

asyncio.run(main())
EOF

cat > "$work/benign.lua" <<LUA
wrk.method = "POST"
wrk.body = '$calc'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $BENCH_TOKEN_BENIGN"
function init(args) bad = 0 end
-- A refused call (200 with "ok":false) counts as an error too.
function response(status, headers, body)
    if status ~= 200 or not string.find(body, '"ok":true', 1, true) then bad = bad + 1 end
end
dofile("$root/bench/wrk-report.lua")
LUA

at_least() { [ "$("${@:3}")" -ge "$2" ] 2>/dev/null; } # at_least _ N CMD...: CMD prints >= N
drained() { [ "$(in_flight "$1")" = 0 ] && [ "$(rest_in_flight "$1")" = 0 ]; }
parsed_since() { [ "$(metric "$1" wasmhub_low_priority_parses_total)" -ge "$2" ] 2>/dev/null; }

# measure HUB SCENARIO: starts the attack on a drained hub, waits until /metrics
# shows it engaged, times the benign client, stops the attack and waits until the
# hub has drained.
measure() {
    local hub=$1 scenario=$2
    local p=${hub_port[$hub]} mode="" token="" conns=8
    case "$scenario" in
        idle) ;;
        pool-slow) mode=slow token=$BENCH_TOKEN_POOL ;;
        pool-spin) mode=spin token=$BENCH_TOKEN_POOL ;;
        big-input) mode=input token=$BENCH_TOKEN_INPUT conns=4 ;;
        same-slow) mode=slow token=$BENCH_TOKEN_BENIGN ;;
        same-spin) mode=spin token=$BENCH_TOKEN_BENIGN conns=4 ;;
        same-input) mode=input token=$BENCH_TOKEN_BENIGN conns=4 ;;
        *) echo "unknown scenario $scenario" >&2; exit 2 ;;
    esac
    local parses offloaded
    parses="$(metric "$p" wasmhub_low_priority_parses_total)"
    offloaded="$(metric "$p" wasmhub_low_priority_calls_total)"
    if [ -n "$mode" ]; then
        nice -n "$attack_nice" python3 "$work/attack.py" "$mode" "$p" "$token" "$conns" &
        attack_pid=$!
        case "$mode" in
            # Engaged: the slot attacks hold (at least) 100 calls; each input client
            # had a large input parsed.
            slow | spin) wait_until "$scenario to engage on hub $hub" at_least _ 100 in_flight "$p" ;;
            input) wait_until "$scenario to engage on hub $hub" parsed_since "$p" $((parses + conns)) ;;
        esac
    fi
    local line attack
    line="$(wrk -t1 -c1 -d"${duration}s" --timeout 30s -s "$work/benign.lua" "http://127.0.0.1:$p/api/hub/call" | grep RESULT)"
    attack="$(in_flight "$p")"
    offloaded=$(($(metric "$p" wasmhub_low_priority_calls_total) - offloaded))
    bench_stop
    local p50 p99 requests errors
    read -r _ p50 p99 requests errors <<<"$(echo "${line#RESULT }" | sed -E 's/[a-z_/0-9]+=//g')"
    echo "$hub $scenario $p50 $p99 $requests $errors $attack $offloaded" >>"$work/results"
    # A closed connection cancels its calls: the next scenario starts from nothing.
    wait_until "hub $hub to drain after $scenario" drained "$p"
}

read -r -a scenarios <<<"${SCENARIOS:-idle pool-slow pool-spin big-input same-slow same-spin same-input}"
echo "benign calc.eval \"1+1\" via POST /api/hub/call, 1 connection, ${duration}s per measurement, $rounds rounds," \
    "$(nproc) cores shared with the clients (attackers at nice $attack_nice)"
for h in "${hubs[@]}"; do echo "  hub $h: ${hub_bin[$h]}"; done
echo "  load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$rounds"); do
    order=("${hubs[@]}")
    if [ "${#hubs[@]}" = 2 ] && [ $((round % 2)) = 0 ]; then order=(B A); fi
    for scenario in "${scenarios[@]}"; do
        for h in "${order[@]}"; do
            measure "$h" "$scenario"
        done
    done
    echo "  round $round done (hubs ${order[*]}), load $(cut -d' ' -f1-3 /proc/loadavg)"
done

python3 - "$work/results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    hub, s, p50, p99, n, errs, attack, offloaded = line.split()
    rows.setdefault((hub, s), []).append((float(p50), float(p99), int(n), int(errs), attack, offloaded))
hubs = sorted({h for h, _ in rows})
scenarios = list(dict.fromkeys(s for _, s in rows))
med = lambda rs, i: statistics.median(r[i] for r in rs)
idle = {h: med(rows[(h, "idle")], 1) for h in hubs}
print(f"  {'hub':<3} {'scenario':<11} {'p50 ms':>8} {'p99 ms':>8} {'p99/idle':>8} {'calls':>7} {'errors':>6}  "
      f"{'each round p99 ms':<24} {'attack calls':<14} {'offloaded':<18} verdict")
missed = []
for s in scenarios:
    for h in hubs:
        rs = rows[(h, s)]
        ratio = med(rs, 1) / idle[h] if idle[h] else float("nan")
        verdict = "" if s == "idle" else ("ok (<= 3x)" if ratio <= 3 else "OVER 3x")
        if s != "idle" and not ratio <= 3:
            missed.append((h, s, ratio))
        each = ",".join(f"{r[1]:.2f}" for r in rs)
        print(f"  {h:<3} {s:<11} {med(rs, 0):8.3f} {med(rs, 1):8.3f} {ratio:7.1f}x "
              f"{sum(r[2] for r in rs):7d} {sum(r[3] for r in rs):6d}  {each:<24} "
              f"{','.join(r[4] for r in rs):<14} {','.join(r[5] for r in rs):<18} {verdict}")
if len(hubs) == 2:
    print("  B/A of the p99 medians: " + ", ".join(
        f"{s} {med(rows[('B', s)], 1) / med(rows[('A', s)], 1):.2f}" for s in scenarios))
for h in hubs:
    attacks = [(med(rows[(h, s)], 1), s) for s in scenarios if s != "idle"]
    if not attacks:
        continue
    worst = max(attacks)
    print(f"hub {h}: attack-p99 / idle-p99 {worst[0] / idle[h]:.1f}x at worst ({worst[1]}; target <= 3x)")
for h, s, ratio in missed:
    print(f"missed the 3x target: hub {h} {s} ({ratio:.1f}x idle p99)", file=sys.stderr)
sys.exit(1 if missed else 0)
PY
