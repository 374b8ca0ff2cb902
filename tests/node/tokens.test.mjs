// Token ids from `wasmhub tokens` against the reference tokenizer, js-tiktoken
// (pinned in package.json), on a corpus of English, code, JSON, CJK, emoji,
// whitespace runs, numbers, contractions and one long piece (lib/token-corpus.mjs). The suite writes js-tiktoken's own
// o200k_base and cl100k_base ranks (its compact format) out as `.tiktoken` files,
// points the hub at them (`tokenizers.dir`, and `file:` for one), and compares
// every id, not only the counts.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { corpus, names, text, writeCorpus, hubIds as ids } from "./lib/token-corpus.mjs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Tiktoken } from "js-tiktoken/lite";
import o200k from "js-tiktoken/ranks/o200k_base";
import cl100k from "js-tiktoken/ranks/cl100k_base";


let work;
const bin = process.env.WASMHUB_BIN;

before(() => {
  work = mkdtempSync(join(tmpdir(), "wasmhub-tokens-"));
  for (const [name, ranks] of [["o200k_base", o200k], ["cl100k_base", cl100k]]) {
    writeFileSync(join(work, `${name}.tiktoken`), tiktokenFile(ranks));
  }
  writeCorpus(work);
});

after(() => rmSync(work, { recursive: true, force: true }));

// js-tiktoken's compact ranks: lines of `! OFFSET TOKEN TOKEN ...`, the tokens'
// ranks counting up from OFFSET; a `.tiktoken` file is `TOKEN RANK` per line.
function tiktokenFile(ranks) {
  const lines = [];
  for (const line of ranks.bpe_ranks.split("\n").filter(Boolean)) {
    const [, offset, ...tokens] = line.split(" ");
    tokens.forEach((token, i) => lines.push(`${token} ${Number(offset) + i}`));
  }
  return lines.join("\n") + "\n";
}

function hubIds(spec, files) {
  return ids(work, spec, files);
}

for (const [name, ranks, spec] of [
  ["o200k_base", o200k, "tiktoken:o200k_base"],
  ["cl100k_base", cl100k, "tiktoken:cl100k_base"],
  ["o200k_base", o200k, "file:o200k_base.tiktoken"],
]) {
  test(`wasmhub tokens --tokenizer ${spec} gives js-tiktoken's ids`, () => {
    const reference = new Tiktoken(ranks);
    const got = hubIds(spec, names.map((n) => `${n}.txt`));
    names.forEach((n, i) => {
      assert.deepEqual(got[i], reference.encode(text(n)), `${name} ids of ${n}`);
    });
  });
}

test("wasmhub tokens counts, and names the file and the limit it broke", () => {
  const out = execFileSync(bin, ["tokens", "--tokenizer", "tiktoken:o200k_base", "--set", `tokenizers.dir=${JSON.stringify(work)}`, "english.txt"], {
    encoding: "utf8",
    cwd: work,
  });
  assert.equal(out, `${new Tiktoken(o200k).encode(corpus.english).length}\tenglish.txt\n`);
  let failed;
  try {
    execFileSync(bin, ["tokens", "--tokenizer", "tiktoken:o200k_base", "--set", `tokenizers.dir=${JSON.stringify(work)}`, "--set", "tokenizers.max_file_kb=1024", "english.txt"], { encoding: "utf8", cwd: work, stdio: "pipe" });
  } catch (e) {
    failed = e;
  }
  assert.ok(failed, "a ranks file over tokenizers.max_file_kb is refused");
  assert.match(failed.stderr, /o200k_base\.tiktoken is \d+ bytes, larger than tokenizers\.max_file_kb \(1024 KiB\)/);
});
