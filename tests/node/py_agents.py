"""The official Python `openai` client (pinned in requirements.lock) chatting with
the hub's agent `calculator` by its name as `model`, run by agents.test.mjs with
the hub's `/v1` URL and a token: a non-streamed completion and a stream (with
`top_p` set by the request) both carry only the agent's text. Prints one
`ok - ` / `not ok - ` line per check and exits non-zero on any failure."""

import sys

import openai

client = openai.OpenAI(base_url=sys.argv[1], api_key=sys.argv[2], max_retries=0)
question = [{"role": "user", "content": "What is 6*7?"}]
failed = 0


def check(name, ok, detail=""):
    global failed
    print(f"{'ok' if ok else 'not ok'} - {name}{'' if ok else ': ' + detail}")
    failed += 0 if ok else 1


completion = client.chat.completions.create(model="calculator", messages=question)
choice = completion.choices[0]
check("a completion from the agent", choice.message.content == "6*7 = 42", repr(choice.message))
check("it finished on its own", choice.finish_reason == "stop", repr(choice.finish_reason))

text = ""
finish = None
for chunk in client.chat.completions.create(model="calculator", messages=question, stream=True, top_p=0.5):
    for c in chunk.choices:
        text += c.delta.content or ""
        finish = c.finish_reason or finish
check("a stream from the agent", text == "6*7 = 42", repr(text))
check("the stream finished", finish == "stop", repr(finish))
sys.exit(1 if failed else 0)
