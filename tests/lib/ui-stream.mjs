// Reading an AI SDK UI message stream the way the suites check it, shared by the
// suites that need it raw (tests/chat, tests/replicas). No dependencies.

/// The chunks of a UI message stream (SSE `data:` lines), to its end.
export async function readChunks(response) {
  const chunks = [];
  let buf = "";
  const decoder = new TextDecoder();
  for await (const piece of response.body) {
    buf += decoder.decode(piece, { stream: true });
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const event = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      const data = event.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
      if (data && data !== "[DONE]") chunks.push(JSON.parse(data));
    }
  }
  return chunks;
}

/// The text of the text deltas of `chunks`.
export const deltas = (chunks) => chunks.filter((c) => c.type === "text-delta").map((c) => c.delta).join("");
