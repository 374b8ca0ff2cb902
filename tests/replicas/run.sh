#!/usr/bin/env bash
# Scale-out with real parts on loopback: a real PostgreSQL (scripts/pg.sh), three
# `wasmhub serve` replicas on it (`--set storage.backend=postgres`, the same plugins
# folder and plugins.lock with `--locked`, the same token, their own data folders,
# a short `storage.lease_secs`), a scripted OpenAI-compatible model (upstream.mjs)
# behind them, and HAProxy (Debian's `haproxy`) in front, round robin, naming the
# replica that answered in an `X-Served-By` header. Then, in this order:
#   chat.test.mjs      the AI SDK chat client (ai 7.x, as tests/chat pins it): a
#                      multi-turn chat whose turns land on different replicas, a
#                      live turn resumed on another replica (replay + live), a client
#                      that left a turn and comes back at another replica, and a
#                      stop sent to a replica that does not run the turn;
#   mcp_client.py      the Python MCP SDK (as tests/mcp pins it): one 2025-11-25
#                      session whose requests go to every replica;
#   calls.test.mjs     concurrent hub_calls from many clients: one audit record per
#                      call, the same records on every replica;
#   failover.test.mjs  kill -9 of the replica running a turn: no finished step lost,
#                      a new message waits while its lease is live and runs once
#                      it expired.
# Installs haproxy and postgresql with apt when missing, the npm packages from
# package-lock.json and the Python ones into ${WASMHUB_CACHE:-~/.cache/wasmhub}/replicas-venv;
# builds the host with the postgres feature (scripts/cargo-test.sh --no-run: a no-op
# after the test command's build). Everything started here is stopped by PID on exit.
# Prints `N passed, M failed`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=tests/lib/suite.sh
source "$root/tests/lib/suite.sh"
lease_secs=5

need_built calc text
need_debian haproxy haproxy
echo "--- installing the pinned clients"
npm_node "$here"
python_venv "$cache/replicas-venv" "$root/tests/mcp/requirements.lock"
suite_work
pg="$(mktemp -d)"
suite_cleanup() {
    bash "$root/scripts/pg.sh" stop "$pg"
}

database_url="$(bash "$root/scripts/pg.sh" start "$pg")"
echo "--- PostgreSQL $database_url"

start_upstream "$node" "$work"
pids+=("$upstream_pid")

# One plugins folder and lock file, one configuration, one token: what every replica
# must share. Data folders (the compiled-component cache) are each replica's own.
mkdir "$work/plugins"
cp "$plugins/calc.wasm" "$plugins/text.wasm" "$work/plugins/"
"$bin" plugin lock "$work/plugins" >/dev/null
token="replicas-test-secret"
cat >"$work/wasmhub.toml" <<TOML
plugins_dir = "$work/plugins"

[[providers]]
name = "scripted"
base_url = "$upstream"
models = ["scripted-*"]
max_retries = 0

[agent]
model = "scripted/scripted-1"

[[tokens]]
name = "replicas"
secret_env = "WASMHUB_TOKEN"
allow = ["*"]
TOML

replicas="["
backends=""
for i in 1 2 3; do
    port="$(free_port)"
    DATABASE_URL="$database_url" WASMHUB_TOKEN="$token" WASMHUB_LOG=info "$bin" serve --config "$work/wasmhub.toml" \
        --listen "127.0.0.1:$port" --data "$work/data-r$i" --locked \
        --set storage.backend=postgres --set storage.lease_secs=$lease_secs >"$work/r$i.log" 2>&1 &
    pids+=($!)
    replicas+="{\"name\":\"r$i\",\"url\":\"http://127.0.0.1:$port\",\"pid\":$!},"
    backends+="    server r$i 127.0.0.1:$port check cookie r$i"$'\n'
done
replicas="${replicas%,}]"
for i in 1 2 3; do
    url="$(echo "$replicas" | python3 -c "import json,sys; print(json.load(sys.stdin)[$i-1]['url'])")"
    wait_health "$url" "$work/r$i.log"
done

lb_port="$(free_port)"
cat >"$work/haproxy.cfg" <<CFG
global
    maxconn 4096

defaults
    mode http
    timeout connect 2s
    timeout client 300s
    timeout server 300s
    # A replica that is down: try another one (only when nothing was sent to it).
    option redispatch
    retries 3
    retry-on conn-failure empty-response

frontend hub
    bind 127.0.0.1:$lb_port
    default_backend replicas

backend replicas
    balance roundrobin
    # Ready = every plugin loaded (/health?ready: 200, 503 while loading).
    option httpchk
    http-check send meth GET uri /health?ready hdr Host localhost
    http-check expect status 200
    default-server inter 500ms fall 2 rise 2
    http-response set-header X-Served-By %[srv_name]
    # A request with "Cookie: SERVERID=rN" goes to rN (HAProxy sets none itself):
    # how a test makes a reload land on another replica.
    cookie SERVERID
$backends
CFG
haproxy -c -q -f "$work/haproxy.cfg"
haproxy -db -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 &
pids+=($!)
lb="http://127.0.0.1:$lb_port"
wait_health "$lb" "$work/haproxy.log"
echo "--- $(haproxy -v | head -n1) on $lb, round robin over $replicas"

passed=0
failed=0
run() { # name command...: counts its `ok` / `not ok` lines (TAP for node's runner)
    local name=$1
    shift
    local status=0
    REPLICAS="$replicas" LB_URL="$lb" UPSTREAM_URL="$upstream" TOKEN="$token" LEASE_SECS="$lease_secs" \
        timeout 600 "$@" >"$work/$name.log" 2>&1 || status=$?
    grep -E '^(ok|not ok) ' "$work/$name.log" || true
    local ok bad
    ok=$(grep -c '^ok ' "$work/$name.log" || true)
    bad=$(grep -c '^not ok ' "$work/$name.log" || true)
    passed=$((passed + ok))
    if [ "$status" -ne 0 ] || [ "$bad" -gt 0 ]; then
        failed=$((failed + (bad > 0 ? bad : 1)))
        echo "--- $name failed (status $status):" >&2
        grep -vE '^(ok |# )' "$work/$name.log" | tail -n 60 >&2
        for i in 1 2 3; do
            echo "--- r$i log (tail)" >&2
            tail -n 15 "$work/r$i.log" >&2
        done
    fi
}
node_test=("$node" --test --test-reporter=tap --test-concurrency=1)

echo "--- AI SDK chat across replicas"
run chat "${node_test[@]}" "$here/chat.test.mjs"
echo "--- Python MCP SDK, one 2025-11-25 session across replicas"
run mcp "$python" "$here/mcp_client.py"
echo "--- concurrent hub_calls and the audit log"
run calls "${node_test[@]}" "$here/calls.test.mjs"
echo "--- kill -9 of the replica running a turn"
run failover "${node_test[@]}" "$here/failover.test.mjs"

echo
echo "replicas: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
