#!/usr/bin/env bash
# A throwaway PostgreSQL server on loopback for the test command, the replicas suite
# and the benchmarks.
#
#   scripts/pg.sh start DIR [PORT] [-c name=value ...]
#       Installs Debian's `postgresql` when no server binaries are on the machine
#       (apt-get, once), runs initdb into DIR/data and `postgres` as the `postgres`
#       user on 127.0.0.1:PORT (a free port when PORT is empty or omitted), with its
#       socket and log (DIR/postgres.log) in DIR, trust authentication (loopback
#       only), and the extra `-c` settings given. Waits until it accepts
#       connections, creates the database `wasmhub`, writes the server's PID to
#       DIR/postgres.pid and prints the URL postgres://postgres@127.0.0.1:PORT/wasmhub.
#       DIR must be a fresh folder the `postgres` user can reach (mktemp -d in /tmp).
#   scripts/pg.sh stop DIR
#       Stops the server started into DIR by its PID (a fast shutdown: open sessions
#       are closed), waits until it is gone (SIGKILL after 30 s) and removes DIR.
set -euo pipefail

usage() {
    echo "usage: scripts/pg.sh start DIR [PORT] [-c name=value ...] | scripts/pg.sh stop DIR" >&2
    exit 2
}

# The newest installed server's bin folder (Debian keeps one per major version).
server_bin() {
    local dir
    dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)"
    if [ -n "$dir" ] && [ -x "$dir/postgres" ] && [ -x "$dir/initdb" ]; then
        echo "$dir"
    fi
}

install_server() {
    echo "--- installing postgresql from Debian" >&2
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends postgresql; } >/dev/null; then
        echo "pg.sh: cannot install postgresql (apt-get install -y postgresql)" >&2
        exit 1
    fi
}

# shellcheck source=scripts/loopback.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/loopback.sh" # free_port

# as_postgres CMD...: runs CMD as the postgres user (setpriv execs it).
as_postgres() {
    setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"
}

start() {
    local dir=$1 port=""
    shift
    if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
        port=$1
        shift
    fi
    [ -n "$port" ] || port="$(free_port)"
    local bin
    bin="$(server_bin)"
    if [ -z "$bin" ]; then
        install_server
        bin="$(server_bin)"
        [ -n "$bin" ] || { echo "pg.sh: postgresql installed but no server in /usr/lib/postgresql/*/bin" >&2; exit 1; }
    fi
    mkdir -p "$dir"
    if [ -e "$dir/data" ]; then
        echo "pg.sh: $dir/data exists already; give a fresh folder" >&2
        exit 1
    fi
    chown postgres:postgres "$dir"
    if ! as_postgres test -w "$dir"; then
        echo "pg.sh: the postgres user cannot write $dir (a parent folder is closed to it?); use a folder from mktemp -d" >&2
        exit 1
    fi
    # No fsync for the data of a throwaway server unless asked (-c fsync=on).
    as_postgres "$bin/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2
        exit 1
    }
    # setpriv directly (not through the function): `$!` is then postgres itself.
    setpriv --reuid=postgres --regid=postgres --init-groups -- "$bin/postgres" -D "$dir/data" -p "$port" -k "$dir" \
        -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off "$@" \
        >"$dir/postgres.log" 2>&1 </dev/null &
    local pid=$!
    echo "$pid" >"$dir/postgres.pid"
    # The server's own PID file names the same process once it is up.
    for _ in $(seq 1 300); do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "pg.sh: postgres exited at start:" >&2
            cat "$dir/postgres.log" >&2
            exit 1
        fi
        if as_postgres "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" 2>/dev/null; then
            if [ "$(head -n1 "$dir/data/postmaster.pid")" != "$pid" ]; then
                echo "pg.sh: 127.0.0.1:$port answers, but not the postgres started here (PID $pid)" >&2
                kill -9 "$pid" 2>/dev/null || true
                exit 1
            fi
            as_postgres "$bin/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres \
                -c 'CREATE DATABASE wasmhub' >/dev/null
            echo "postgres://postgres@127.0.0.1:$port/wasmhub"
            return 0
        fi
        sleep 0.1
    done
    echo "pg.sh: postgres did not accept connections on 127.0.0.1:$port within 30 s:" >&2
    cat "$dir/postgres.log" >&2
    kill -9 "$pid" 2>/dev/null || true
    exit 1
}

stop() {
    local dir=$1
    if [ -f "$dir/postgres.pid" ]; then
        local pid
        pid="$(cat "$dir/postgres.pid")"
        # SIGINT is PostgreSQL's fast shutdown.
        kill -INT "$pid" 2>/dev/null || true
        for _ in $(seq 1 300); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            kill -9 "$pid" 2>/dev/null || true
        fi
    fi
    rm -rf "$dir"
}

case "${1:-}" in
start)
    [ $# -ge 2 ] || usage
    shift
    start "$@"
    ;;
stop)
    [ $# -eq 2 ] || usage
    stop "$2"
    ;;
*) usage ;;
esac
