# Shared set-up of the loopback benchmarks that drive the release binary with wrk,
# sourced by bench/mcp.sh, bench/fairness.sh and bench/replicas.sh (after `cd` to the repository root):
# wrk installed; $bin, the release binary (or WASMHUB_BIN); the example plugins and
# test guests built (every run: both builds are no-ops when up to date, and a stale
# guest would measure old code; a script that sets bench_plugins="calc" before
# sourcing this builds only those plugins, reusing what the quick start built); $work, a temporary folder; $port, a free loopback port; and an
# EXIT trap that runs the script's own `bench_stop` if it defines one, stops the hub
# started into $hub_pid, and removes $work. It sources scripts/loopback.sh (free_port).

if ! command -v wrk >/dev/null; then
    apt-get install -y wrk >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y wrk >/dev/null; }
fi
bin="${WASMHUB_BIN:-}"
if [ -z "$bin" ]; then
    cargo build --release -p wasmhub
    bin=target/release/wasmhub
fi
bash scripts/build-plugins.sh ${bench_plugins:+--only "$bench_plugins"} >/dev/null
bash tests/guests/build.sh >/dev/null

work="$(mktemp -d)"
hub_pid=""
bench_cleanup() {
    if declare -F bench_stop >/dev/null; then bench_stop; fi
    if [ -n "$hub_pid" ]; then
        kill "$hub_pid" 2>/dev/null || true
        wait "$hub_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap bench_cleanup EXIT
# shellcheck source=scripts/loopback.sh
source scripts/loopback.sh
port="$(free_port)"
