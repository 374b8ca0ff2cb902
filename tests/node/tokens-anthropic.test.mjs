// Token ids from `wasmhub tokens --tokenizer anthropic:claude` against the reference,
// npm @anthropic-ai/tokenizer (pinned in package.json), on the shared corpus
// (lib/token-corpus.mjs) plus text holding the file's special tokens. The suite copies
// the package's own claude.json into tokenizers.dir (and names it by `file:` once) and
// compares every id with the package's encoder as its countTokens calls it (every
// special token allowed). countTokens first NFKC-normalizes the text, which the hub
// does not: counts are compared on every text that NFKC leaves unchanged.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { countTokens, getTokenizer } from "@anthropic-ai/tokenizer";
import { names, text, writeCorpus, hubIds } from "./lib/token-corpus.mjs";

const require = createRequire(import.meta.url);
const specials = "<EOT>Human: hi<META_START>x<META_END> <META><SOS><SOS>< EOT> <EOT";
let work;

before(() => {
  work = mkdtempSync(join(tmpdir(), "wasmhub-tokens-claude-"));
  copyFileSync(require.resolve("@anthropic-ai/tokenizer/claude.json"), join(work, "claude.json"));
  writeCorpus(work);
  writeFileSync(join(work, "specials.txt"), specials);
});

after(() => rmSync(work, { recursive: true, force: true }));

function reference(t) {
  const tokenizer = getTokenizer();
  try {
    return Array.from(tokenizer.encode(t, "all"));
  } finally {
    tokenizer.free();
  }
}

const files = [...names.map((n) => `${n}.txt`), "specials.txt"];
const texts = [...names.map(text), specials];

for (const spec of ["anthropic:claude", "file:claude.json"]) {
  test(`wasmhub tokens --tokenizer ${spec} gives @anthropic-ai/tokenizer's ids`, () => {
    const got = hubIds(work, spec, files);
    texts.forEach((t, i) => assert.deepEqual(got[i], reference(t), `ids of ${files[i]}`));
  });
}

test("wasmhub tokens counts like countTokens on text NFKC leaves unchanged", () => {
  const got = hubIds(work, "anthropic:claude", files);
  let compared = 0;
  texts.forEach((t, i) => {
    if (t.normalize("NFKC") === t) {
      assert.equal(got[i].length, countTokens(t), `count of ${files[i]}`);
      compared += 1;
    }
  });
  // English, contractions, code, python, JSON, emoji, urls, long and the specials at least.
  assert.ok(compared >= 9, `compared ${compared} texts`);
  // The special tokens each count as one, as countTokens counts them.
  assert.equal(countTokens("<EOT>"), 1);
  assert.deepEqual(hubIds(work, "anthropic:claude", ["specials.txt"])[0].slice(0, 1), [0]);
});
