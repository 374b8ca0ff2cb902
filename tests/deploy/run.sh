#!/usr/bin/env bash
# The Kubernetes manifests in deploy/, offline:
#   - schema validation of every resource with the PyPI `kubernetes-validate`
#     (requirements.lock; its schemas ship in the package: no cluster, no network),
#     strict (unknown fields are errors), and a broken copy must be refused;
#   - check_manifests.py: the manifests fit together and fit the hub (every variable
#     the TOML names comes from a Secret, --locked, probes on /health, mounts...);
#   - the ConfigMap's wasmhub.toml boots the real binary: `wasmhub serve` with it on
#     a throwaway PostgreSQL (scripts/pg.sh), the environment the Deployment gives,
#     and only listen, plugins_dir and data_dir moved to this machine by flags; it
#     must get ready, answer a hub_call with a token from the Secret, and have
#     migrated its schema in PostgreSQL (wasmhub_schema).
# The venv lives in ${WASMHUB_CACHE:-~/.cache/wasmhub}/deploy-venv. Everything started
# here is stopped by PID on exit. Prints `N passed, M failed`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=tests/lib/suite.sh
source "$root/tests/lib/suite.sh"

need_built calc
python_venv "$cache/deploy-venv" "$here/requirements.lock"
venv="$cache/deploy-venv"
suite_work
pg="$(mktemp -d)"
suite_cleanup() {
    bash "$root/scripts/pg.sh" stop "$pg"
}

passed=0
failed=0
record() { # status name
    if [ "$1" -eq 0 ]; then
        passed=$((passed + 1))
        echo "ok - $2"
    else
        failed=$((failed + 1))
        echo "not ok - $2"
    fi
}

status=0
"$venv/bin/kubernetes-validate" --strict --quiet "$root"/deploy/*.yaml >"$work/validate.log" 2>&1 || status=$?
record "$status" "kubernetes-validate --strict accepts every manifest in deploy/"
[ "$status" -eq 0 ] || cat "$work/validate.log"

# The validator must be able to fail: a misspelt probe field is refused.
sed 's/readinessProbe:/readinesProbe:/' "$root/deploy/deployment.yaml" >"$work/broken.yaml"
status=0
"$venv/bin/kubernetes-validate" --strict --quiet "$work/broken.yaml" >/dev/null 2>&1 || status=$?
record "$((status == 0))" "kubernetes-validate refuses a Deployment with a misspelt field"

status=0
"$python" "$here/check_manifests.py" "$root/deploy" "$work/wasmhub.toml" >"$work/check.log" 2>&1 || status=$?
cat "$work/check.log"
passed=$((passed + $(grep -c '^ok ' "$work/check.log" || true)))
bad=$(grep -c '^not ok ' "$work/check.log" || true)
failed=$((failed + bad))
if [ "$status" -ne 0 ] && [ "$bad" -eq 0 ]; then
    record 1 "check_manifests.py exited with status $status"
fi

# The ConfigMap's TOML, as a replica would run it.
database_url="$(bash "$root/scripts/pg.sh" start "$pg")"
mkdir "$work/plugins"
cp "$root/dist/plugins/calc.wasm" "$work/plugins/"
"$bin" plugin lock "$work/plugins" >/dev/null
port="$(free_port)"
DATABASE_URL="$database_url" WASMHUB_TOKEN_APPS=deploy-test-apps WASMHUB_TOKEN_OPERATOR=deploy-test-operator \
    OPENAI_API_KEY=unused WASMHUB_LOG=warn "$bin" serve --config "$work/wasmhub.toml" --locked \
    --listen "127.0.0.1:$port" --plugins "$work/plugins" --data "$work/data" >"$work/hub.log" 2>&1 &
hub_pid=$!
pids+=("$hub_pid")
status=1
for _ in $(seq 1 600); do
    if curl -fsS "http://127.0.0.1:$port/health" 2>/dev/null | grep -q '"status":"ok"'; then
        status=0
        break
    fi
    kill -0 "$hub_pid" 2>/dev/null || break
    sleep 0.2
done
record "$status" "wasmhub serve starts with the ConfigMap's wasmhub.toml on PostgreSQL"
[ "$status" -eq 0 ] || tail -n 20 "$work/hub.log"

answer="$(curl -sS "http://127.0.0.1:$port/api/hub/call" -H 'authorization: Bearer deploy-test-apps' \
    -H 'content-type: application/json' -d '{"calls":[{"tool":"calc.eval","input":{"expression":"6*7"}}]}' 2>&1 || true)"
status=0
[[ "$answer" == *'"decimal":"42"'* ]] || status=1
record "$status" "a hub_call with the apps token from the Secret is answered"
[ "$status" -eq 0 ] || echo "    $answer"

components="$(psql "$database_url" -tA -c \
    "SELECT string_agg(component || ' v' || version, ', ' ORDER BY component) FROM wasmhub_schema" 2>&1 || true)"
status=0
[[ "$components" =~ " v"[0-9] ]] || status=1
record "$status" "the hub migrated its schema in PostgreSQL: ${components:-nothing}"

echo
echo "deploy: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
