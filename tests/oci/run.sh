#!/usr/bin/env bash
# Plugin distribution against real parts on loopback:
#   - a real OCI registry: Debian's `docker-registry` (CNCF distribution), installed
#     with apt when missing, run with a config file on 127.0.0.1:<free port> with
#     filesystem storage in a temporary folder;
#   - a reference client: the PyPI `oras` client (oras-py, requirements.lock),
#     in a venv under ${WASMHUB_CACHE:-~/.cache/wasmhub}/oci-venv;
#   - the real wasmhub binary: `plugin pull` by tag and by digest of what oras
#     pushed the standard way (config application/vnd.wasm.config.v0+json, layer
#     application/wasm), `serve` on the pulled plugin with [[plugins.sources]]
#     and an operation called, `--locked` refusing the tag once it moved (sync,
#     pull and serve), `plugin push` read back by oras byte for byte, and signed
#     pulls under [trust] (signed, unsigned, wrong key).
# The test driver is oci_test.py; everything started here is stopped by PID on
# exit, failure included. Prints `N passed, M failed`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="$root/target/debug/wasmhub"
plugins="$root/dist/plugins"
cache="${WASMHUB_CACHE:-$HOME/.cache/wasmhub}"

[ -x "$bin" ] || (cd "$root" && cargo build -p wasmhub)
if ! ls "$plugins"/text.wasm "$plugins"/calc.wasm >/dev/null 2>&1; then
    bash "$root/scripts/build-plugins.sh"
fi

if [ ! -x /usr/bin/docker-registry ]; then
    echo "--- installing docker-registry from Debian"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        docker-registry; } >/dev/null
fi
venv="$cache/oci-venv"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.lock"

work="$(mktemp -d)"
pids=()
cleanup() {
    # The driver records the hubs it starts here, so a failed run stops them too.
    if [ -f "$work/pids" ]; then
        while read -r pid; do pids+=("$pid"); done <"$work/pids"
    fi
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
cat >"$work/registry.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $work/registry-data
http:
  addr: 127.0.0.1:$port
EOF
/usr/bin/docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
    if curl -fsS "http://127.0.0.1:$port/v2/" >/dev/null 2>&1; then
        break
    fi
    sleep 0.1
done
curl -fsS "http://127.0.0.1:$port/v2/" >/dev/null || { cat "$work/registry.log" >&2; exit 1; }
echo "--- registry $(/usr/bin/docker-registry --version 2>&1 | head -1) on 127.0.0.1:$port"

REGISTRY="127.0.0.1:$port" WASMHUB_BIN="$bin" PLUGINS="$plugins" WORK="$work" WASMHUB_LOG=warn \
    timeout 300 "$venv/bin/python" "$here/oci_test.py"
