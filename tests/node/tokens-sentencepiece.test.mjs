// Token ids from `wasmhub tokens --tokenizer sentencepiece:...` against the reference,
// PyPI sentencepiece (pinned in requirements.lock, run by py_sentencepiece.py). The
// suite trains two small BPE models on a text it writes (the shared corpus of
// lib/token-corpus.mjs three times, plus chat markup): `gemma`, configured like Gemma's
// tokenizer.model (byte fallback, identity normalizer, no dummy prefix, whitespace
// kept, split digits, user-defined symbols), `nfkc` (sentencepiece's defaults: the
// nmt_nfkc character map, dummy prefix, extra whitespace removed, with byte fallback)
// and `unigram` (a unigram model with the defaults and no byte fallback). Every id of
// every corpus text must equal `sp.encode`'s.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { names, text, writeCorpus, hubIds } from "./lib/token-corpus.mjs";

const python = process.env.WASMHUB_PYTHON_SENTENCEPIECE;
const script = join(import.meta.dirname, "py_sentencepiece.py");
const chat = "<start_of_turn>user\nWrite ```py\n\t\tx = 12345\n``` please<end_of_turn>\n\n<start_of_turn>model\n";
let work;

function py(...args) {
  return execFileSync(python, [script, ...args], { encoding: "utf8", cwd: work });
}

before(() => {
  work = mkdtempSync(join(tmpdir(), "wasmhub-tokens-sp-"));
  writeCorpus(work);
  writeFileSync(join(work, "chat.txt"), chat);
  const training = [...names.map(text), chat].join("\n");
  writeFileSync(join(work, "train.txt"), [training, training, training].join("\n"));
  for (const kind of ["gemma", "nfkc", "unigram"]) {
    py("train", "train.txt", kind, kind);
  }
});

after(() => rmSync(work, { recursive: true, force: true }));

const files = [...names.map((n) => `${n}.txt`), "chat.txt"];

function reference(model) {
  return py("ids", model, ...files)
    .split("\n")
    .slice(0, files.length)
    .map((line) => JSON.parse(line));
}

for (const [kind, spec] of [
  ["gemma", "sentencepiece:gemma"],
  ["nfkc", "sentencepiece:nfkc"],
  ["unigram", "sentencepiece:unigram"],
  ["gemma", () => `sentencepiece:${join(work, "gemma.model")}`],
]) {
  test(`wasmhub tokens --tokenizer ${typeof spec === "string" ? spec : "sentencepiece:/path/gemma.model"} gives sentencepiece's ids`, () => {
    const want = reference(`${kind}.model`);
    const got = hubIds(work, typeof spec === "string" ? spec : spec(), files);
    files.forEach((f, i) => assert.deepEqual(got[i], want[i], `${kind} ids of ${f}`));
    // The model really falls back to bytes and knows the user-defined symbols: the
    // corpus has characters outside its vocabulary, so some ids are <0xXX> pieces.
    const vocab = readFileSync(join(work, `${kind}.vocab`), "utf8").split("\n").map((l) => l.split("\t")[0]);
    if (kind === "unigram") {
      assert.ok(want.flat().includes(vocab.indexOf("<unk>")), "unknown pieces are exercised");
    } else {
      assert.ok(want.flat().some((id) => /^<0x[0-9A-F]{2}>$/.test(vocab[id])), "byte fallback is exercised");
    }
    if (kind === "gemma") {
      assert.ok(want.at(-1).includes(vocab.indexOf("<start_of_turn>")), "user-defined symbols are exercised");
    }
  });
}

test("a word model is refused with a message naming the model type", () => {
  py("train", "train.txt", "word", "word");
  let failed;
  try {
    execFileSync(
      process.env.WASMHUB_BIN,
      ["tokens", "--tokenizer", "sentencepiece:word", "--set", `tokenizers.dir=${JSON.stringify(work)}`, "english.txt"],
      { encoding: "utf8", cwd: work, stdio: "pipe" },
    );
  } catch (e) {
    failed = e;
  }
  assert.ok(failed, "a word model is refused");
  assert.match(failed.stderr, /word\.model: trainer_spec\.model_type is 3 \(word\); the hub encodes SentencePiece unigram \(1\) and BPE \(2, Gemma's\) models/);
});
