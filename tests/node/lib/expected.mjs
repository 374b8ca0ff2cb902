// An independent reading of a recorded stream: what a client should end up with.
import { fixtureLines } from "./upstream.mjs";

export function expected(name) {
  let text = "";
  let reasoning = "";
  const calls = new Map(); // key -> { id, name, args }
  let last = null;
  for (const line of fixtureLines(name)) {
    const c = JSON.parse(line);
    for (const choice of c.choices ?? []) {
      const d = choice.delta ?? {};
      text += d.content ?? "";
      reasoning += d.reasoning_content ?? d.reasoning ?? "";
      for (const t of d.tool_calls ?? []) {
        let call = t.id ? calls.get(t.id) : last;
        if (!call) {
          call = { id: t.id, name: t.function?.name, args: "" };
          calls.set(t.id, call);
        }
        call.args += t.function?.arguments ?? "";
        last = call;
      }
    }
  }
  const tools = [...calls.values()].map((c) => ({ id: c.id, name: c.name, input: c.args.trim() === "" ? {} : JSON.parse(c.args) }));
  return { text, reasoning, tools };
}
