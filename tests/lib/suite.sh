# What the suites' run.sh share, sourced once `root` (the checkout) is set, with
# scripts/loopback.sh's helpers (free_port, wait_health, stop_pids, start_upstream):
#   need_built [PLUGIN...]  the test build's binary (scripts/cargo-test.sh --no-run,
#                           a no-op when it is current) and the example plugins
#                           (those named, or calc and text); sets $bin and $plugins
#   need_guests             the test guests; sets $examples
#   need_debian CMD PKG     installs Debian's PKG when CMD is missing
#   need_chromium WHAT      Debian's chromium, or fails naming WHAT cannot run
#   npm_node DIR [NODE]     `npm ci` in DIR; sets $node to DIR/node_modules/NODE
#                           (default node22/bin/node, Node pinned in the lockfile)
#   python_venv DIR LOCK    a venv in DIR with LOCK installed; sets $python
#   suite_work              $work (a temporary folder) and $pids (processes the
#                           suite starts); on exit, or a signal, the processes are
#                           stopped (stop_pids), then `suite_cleanup` runs (when
#                           the suite defines one) and $work is removed
# shellcheck source=scripts/loopback.sh
source "$root/scripts/loopback.sh"
cache="${WASMHUB_CACHE:-$HOME/.cache/wasmhub}"

need_built() {
    bin="$root/target/debug/wasmhub"
    plugins="$root/dist/plugins"
    bash "$root/scripts/cargo-test.sh" --no-run --quiet >/dev/null
    local names=("$@") name
    [ ${#names[@]} -gt 0 ] || names=(calc text)
    for name in "${names[@]}"; do
        if [ ! -f "$plugins/$name.wasm" ]; then
            (cd "$root" && bash scripts/build-plugins.sh)
            break
        fi
    done
}

need_guests() {
    examples="$root/target/test-guests/examples.wasm"
    [ -f "$examples" ] || bash "$root/tests/guests/build.sh" >/dev/null
}

need_debian() {
    command -v "$1" >/dev/null && return 0
    echo "--- installing $2 from Debian"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "$2"; } >/dev/null
}

need_chromium() {
    [ -x /usr/bin/chromium ] && return 0
    echo "chromium is missing: installing it from Debian"
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null; then
        echo "FAILED: cannot install chromium (apt-get install -y chromium); $1 cannot run" >&2
        return 1
    fi
}

npm_node() {
    (cd "$1" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    node="$1/node_modules/${2:-node22/bin/node}"
    "$node" --version >/dev/null
}

python_venv() {
    [ -x "$1/bin/python" ] || python3 -m venv "$1"
    "$1/bin/pip" install --quiet --disable-pip-version-check -r "$2"
    python="$1/bin/python"
}

suite_work() {
    work="$(mktemp -d)"
    pids=()
    trap suite_exit EXIT
    # A signal ends the script through exit, so the EXIT trap stops everything too.
    trap 'exit 1' INT TERM
}

suite_exit() {
    [ ${#pids[@]} -eq 0 ] || stop_pids "${pids[@]}"
    if declare -F suite_cleanup >/dev/null; then
        suite_cleanup
    fi
    rm -rf "$work"
}
