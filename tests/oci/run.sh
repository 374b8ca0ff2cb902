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
#     pulls under [trust] (signed, unsigned, wrong key);
#   - a second registry behind the token flow (`auth: token`, a small token server,
#     token_server.py, issuing ES256 JWTs): push and pull with credentials from
#     the environment and from a Docker config file, refused without them.
# The test driver is oci_test.py; everything started here is stopped by PID on
# exit, failure included. Prints `N passed, M failed`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=tests/lib/suite.sh
source "$root/tests/lib/suite.sh"

need_built calc text
need_debian docker-registry docker-registry
python_venv "$cache/oci-venv" "$here/requirements.lock"
suite_work
# The hubs the driver recorded, once it can start no more.
suite_cleanup() {
    if [ -f "$work/pids" ]; then
        mapfile -t hubs <"$work/pids"
        [ ${#hubs[@]} -eq 0 ] || stop_pids "${hubs[@]}"
    fi
}

start_registry() { # name port [auth yaml]
    cat >"$work/$1.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $work/$1-data
http:
  addr: 127.0.0.1:$2
${3:-}
EOF
    /usr/bin/docker-registry serve "$work/$1.yml" >"$work/$1.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 1 100); do
        # 200 when open, 401 behind auth: either way it is up.
        code="$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$2/v2/" || true)"
        if [ "$code" = 200 ] || [ "$code" = 401 ]; then
            return 0
        fi
        sleep 0.1
    done
    cat "$work/$1.log" >&2
    return 1
}

# An open registry, and one behind the token flow (401 Bearer -> token server).
port="$(free_port)"
start_registry registry "$port"
echo "--- registry $(/usr/bin/docker-registry --version 2>&1 | head -1) on 127.0.0.1:$port"
token_port="$(free_port)"
"$python" "$here/token_server.py" "$token_port" "$work/token-cert.pem" wasmhub-test-issuer \
    wasmhub-test ci ci-secret &
pids+=($!)
for _ in $(seq 1 100); do
    [ -f "$work/token-cert.pem" ] && break
    sleep 0.1
done
auth_port="$(free_port)"
start_registry registry-auth "$auth_port" "auth:
  token:
    realm: http://127.0.0.1:$token_port/token
    service: wasmhub-test
    issuer: wasmhub-test-issuer
    rootcertbundle: $work/token-cert.pem"
echo "--- registry with token auth on 127.0.0.1:$auth_port (token server on $token_port)"

# In the background and waited for, so a signal reaches the traps at once.
REGISTRY="127.0.0.1:$port" AUTH_REGISTRY="127.0.0.1:$auth_port" WASMHUB_BIN="$bin" PLUGINS="$plugins" \
    WORK="$work" WASMHUB_LOG=warn timeout 300 "$python" "$here/oci_test.py" &
driver=$!
pids+=("$driver")
wait "$driver"
