# Process helpers of the scripts that run hubs, a scripted model and a balancer on
# loopback (the suites through tests/lib/suite.sh, bench/replicas.sh), sourced:
#   free_port                 prints a free loopback TCP port;
#   wait_health URL LOG [TOKEN]
#                             until URL/health answers "ok" (asked with TOKEN as a
#                             bearer token, when given); else prints LOG's tail
#                             and returns 1 (after 240 s);
#   stop_pids PID...          SIGTERM, up to 15 s for each to exit (a hub's 10 s
#                             shutdown grace and 5 s more), then SIGKILL, named on
#                             stderr: a shutdown bug must not hang the caller;
#   start_upstream NODE DIR [SCRIPT]
#                             a scripted model (SCRIPT, by default
#                             tests/replicas/upstream.mjs) in the background with
#                             NODE, its files in DIR; sets $upstream (its URL) and
#                             $upstream_pid.
# The caller runs from anywhere; paths are relative to this file.
loopback_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

wait_health() {
    for _ in $(seq 1 1200); do
        curl -fsS ${3:+-H "authorization: Bearer $3"} "$1/health" 2>/dev/null | grep -q '"status":"ok"' && return 0
        sleep 0.2
    done
    echo "$1 did not become ready:" >&2
    tail -n 30 "$2" >&2
    return 1
}

stop_pids() {
    local pid
    for pid in "$@"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "$@"; do
        for _ in $(seq 1 150); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "process $pid did not stop within 15 s of SIGTERM: killed" >&2
            kill -9 "$pid" 2>/dev/null || true
        fi
        wait "$pid" 2>/dev/null || true
    done
}

start_upstream() {
    "$1" "${3:-$loopback_root/tests/replicas/upstream.mjs}" >"$2/upstream.url" 2>"$2/upstream.log" &
    upstream_pid=$!
    for _ in $(seq 100); do
        [ -s "$2/upstream.url" ] && break
        sleep 0.1
    done
    upstream="$(head -n1 "$2/upstream.url")"
    if [ -z "$upstream" ]; then
        echo "the scripted upstream did not start:" >&2
        cat "$2/upstream.log" >&2
        return 1
    fi
}
