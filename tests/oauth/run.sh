#!/usr/bin/env bash
# OAuth 2.1 with real MCP clients, against the real binary on loopback: one hub with
# `[oauth]` on and the built-in authorization server (public_url = its loopback URL),
# two tokens (`alice`: calc.*, `ops`: operator) and the calc plugin.
#   - the TypeScript MCP SDK (1.x) client's OAuth (ts_client.mjs): 401, discovery,
#     registration, PKCE S256; the person signs in on the consent page in headless
#     Chromium (consent.mjs: playwright-core driving /usr/bin/chromium) with a
#     one-time sign-in code from `wasmhub oauth code alice`; finishAuth, then the four
#     tools and calc.eval;
#   - the Python MCP SDK (2.x) `OAuthClientProvider` (py_client.py): the same flow,
#     the SDK checking `state` and `iss` (RFC 9207), signing in with a code the
#     operator created in the console (console_code.mjs, Chromium);
#   - a real external authorization server, oidc-provider (idp.mjs, pinned in
#     package.json), in `[[oauth.issuers]]` on loopback http (allow_private,
#     allow_http): its JWT access tokens for the hub's resource (client_credentials
#     with a resource indicator; RS256, ES256, EdDSA) accepted and mapped to
#     `alice`, the TypeScript SDK calling calc.eval with one; scopes narrowing;
#     another resource, expired, tampered, `alg: none` and an unmapped client
#     refused with their reasons; a key rotation fetched again (idp_tokens.mjs);
#   - browser-based clients (cors_browser.mjs): a page on another loopback origin
#     in Chromium reads the metadata, registers, gets the token endpoint's error
#     and revokes with fetch() (CORS), and cannot read the consent form's answer;
#   - the audit: the three clients' calls recorded under `alice` with each client's id.
# Tokens issued by one replica and accepted by another (PostgreSQL) are the e2e
# test oauth_clients::a_token_issued_on_one_replica_works_on_another.
# The shared preamble (tests/lib/suite.sh): the test build and calc, Chromium, the
# npm packages from package-lock.json with their pinned Node, the Python ones
# (tests/mcp/requirements.lock) in ${WASMHUB_CACHE:-~/.cache/wasmhub}/oauth-venv,
# and the work folder whose processes are stopped on exit. Prints `N passed, M failed`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=tests/lib/suite.sh
source "$root/tests/lib/suite.sh"

need_built calc
need_chromium "the OAuth suite"
echo "--- installing the pinned clients"
npm_node "$here"
python_venv "$cache/oauth-venv" "$root/tests/mcp/requirements.lock"
suite_work

port="$(free_port)"
hub="http://127.0.0.1:$port"
idp_secret="oauth-suite-idp-secret"
other_resource="https://other.example/api"
mkdir "$work/idp"
HUB_RESOURCE="$hub/mcp" OTHER_RESOURCE="$other_resource" IDP_SECRET="$idp_secret" \
    start_upstream "$node" "$work/idp" "$here/idp.mjs"
pids+=("$upstream_pid")
issuer="$upstream"
refetch_secs=1
mkdir "$work/plugins"
cp "$plugins/calc.wasm" "$work/plugins/"
printf 'oauth-suite-alice\n' >"$work/alice.secret"
printf 'oauth-suite-ops\n' >"$work/ops.secret"
cat >"$work/wasmhub.toml" <<TOML
listen = "127.0.0.1:$port"
plugins_dir = "$work/plugins"
data_dir = "$work/data"

[[tokens]]
name = "alice"
secret_file = "$work/alice.secret"
allow = ["calc.*"]

[[tokens]]
name = "ops"
secret_file = "$work/ops.secret"
allow = ["*"]
operator = true

[oauth]
public_url = "$hub"
builtin = true

[[oauth.issuers]]
issuer = "$issuer"
allow_private = true
allow_http = true
skew_secs = 0
refetch_secs = $refetch_secs

[oauth.issuers.principals]
"hub-agent" = "alice"
"hub-agent-es" = "alice"
"hub-agent-ed" = "alice"
"hub-short" = "alice"
TOML
"$bin" serve --config "$work/wasmhub.toml" >"$work/hub.log" 2>&1 &
pids+=($!)
wait_health "$hub" "$work/hub.log"

passed=0
failed=0
count() {
    passed=$((passed + $(grep -c '^ok - ' "$1" || true)))
    failed=$((failed + $(grep -c '^not ok - ' "$1" || true)))
}

code="$(WASMHUB_TOKEN=oauth-suite-ops "$bin" oauth code alice --config "$work/wasmhub.toml")"
echo "--- TypeScript MCP SDK"
MCP_URL="$hub/mcp" SIGNIN_CODE="$code" TS_CALLBACK="http://127.0.0.1:$(free_port)/oauth/callback" \
    "$node" "$here/ts_client.mjs" | tee "$work/ts.out" || true
count "$work/ts.out"

echo "--- Python MCP SDK"
console_code="$("$node" "$here/console_code.mjs" "$hub" oauth-suite-ops alice)"
MCP_URL="$hub/mcp" SIGNIN_CODE="$console_code" PY_CALLBACK="http://127.0.0.1:$(free_port)/callback" NODE="$node" \
    "$python" "$here/py_client.py" | tee "$work/py.out" || true
count "$work/py.out"

echo "--- oidc-provider (an external authorization server)"
MCP_URL="$hub/mcp" ISSUER="$issuer" IDP_SECRET="$idp_secret" OTHER_RESOURCE="$other_resource" \
    REFETCH_SECS="$refetch_secs" "$node" "$here/idp_tokens.mjs" | tee "$work/idp.out" || true
count "$work/idp.out"

echo "--- a browser-based client on another origin (CORS)"
HUB_URL="$hub" CORS_CALLBACK="http://127.0.0.1:$(free_port)/callback" \
    "$node" "$here/cors_browser.mjs" | tee "$work/cors.out" || true
count "$work/cors.out"

echo "--- the audit names the principal and each client"
if curl -fsS -H "authorization: Bearer oauth-suite-ops" "$hub/api/calls?limit=50" >"$work/calls.json" &&
    python3 - "$work/calls.json" "$work/ts.out" "$work/py.out" "$work/idp.out" <<'PY'; then
import json, sys
calls = json.load(open(sys.argv[1]))["calls"]
clients = []
for out in sys.argv[2:]:
    ids = [json.loads(l)["client_id"] for l in open(out) if l.startswith('{"client_id"')]
    assert ids, f"{out} printed no client id"
    clients.append(ids[-1])
for client in clients:
    mine = [c for c in calls if c["tool"] == "calc.eval" and c.get("client") == client]
    assert mine and all(c["caller"] == "alice" for c in mine), (client, calls)
print("ok - audit: calc.eval recorded under alice with the client ids", clients)
PY
    passed=$((passed + 1))
else
    echo "not ok - audit: the calls are not recorded with principal and client"
    failed=$((failed + 1))
fi
if grep -q 'wh_at_\|wh_rt_\|wh_ac_\|wh_si_\|oauth-suite-alice\|eyJ' "$work/hub.log"; then
    echo "not ok - the hub log holds a secret"
    failed=$((failed + 1))
else
    echo "ok - no token, code or secret in the hub log"
    passed=$((passed + 1))
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
