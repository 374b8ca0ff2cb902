"""The official Python `openai` client (pinned in requirements.lock) against the
hub's OpenAI proxy, run by openai-client.test.mjs with the base URL of a hub whose
provider `up` is the scripted upstream of lib/upstream.mjs: a recorded stream
iterates to its end without an exception, and a stream the upstream cut
(`cut-midstream`), tore (`torn-midstream`) or left silent past its provider's
idle timeout (`stall-midstream` on provider `slow`, 500 ms) raises
`openai.APIError` from the iteration with the hub's error code, after the chunks
that did arrive. Prints one
`ok - ` / `not ok - ` line per check and exits non-zero on any failure."""

import sys

import openai

client = openai.OpenAI(base_url=sys.argv[1], api_key="client-key-not-forwarded", max_retries=0)
failed = 0


def check(name, ok, detail=""):
    global failed
    print(f"{'ok' if ok else 'not ok'} - {name}{'' if ok else ': ' + detail}")
    failed += 0 if ok else 1


def stream(model):
    """The text deltas the iteration yielded, and the exception it raised."""
    got = []
    try:
        for chunk in client.chat.completions.create(model=model, messages=[], stream=True):
            for choice in chunk.choices:
                got.append(choice.delta.content or "")
    except Exception as e:  # noqa: BLE001 - the test reports whatever was raised
        return got, e
    return got, None


got, error = stream("up/fixture:openai--openai-text")
check("a whole stream iterates to its end", error is None and len(got) > 0, repr(error))

for model, code, want in [("up/cut-midstream", "upstream_incomplete", ["Hel", "lo"]),
                          ("up/torn-midstream", "upstream_malformed", ["Hel"]),
                          ("slow/stall-midstream", "upstream_broken", ["Hel", "lo"])]:
    got, error = stream(model)
    check(f"{model}: the chunks that arrived", got == want, repr(got))
    check(f"{model}: the iteration raises openai.APIError", isinstance(error, openai.APIError), repr(error))
    check(f"{model}: with code {code}", getattr(error, "code", None) == code, repr(getattr(error, "body", error)))
    provider = model.split("/")[0]
    check(f"{model}: the message names the provider",
          str(getattr(error, "message", "")).startswith(f'provider "{provider}": '), repr(error))

sys.exit(1 if failed else 0)
