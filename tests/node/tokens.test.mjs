// Token ids from `wasmhub tokens` against the reference tokenizer, js-tiktoken
// (pinned in package.json), on a corpus of English, code, JSON, CJK, emoji,
// whitespace runs, numbers, contractions and one long piece. The suite writes js-tiktoken's own
// o200k_base and cl100k_base ranks (its compact format) out as `.tiktoken` files,
// points the hub at them (`tokenizers.dir`, and `file:` for one), and compares
// every id, not only the counts.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Tiktoken } from "js-tiktoken/lite";
import o200k from "js-tiktoken/ranks/o200k_base";
import cl100k from "js-tiktoken/ranks/cl100k_base";

const corpus = {
  english: "The quick brown fox jumps over the lazy dog. It's 5 o'clock somewhere, isn't it?",
  contractions: "I'm sure they'll say we've done what you'd've DONE; SHE'S HERE, They'RE not.",
  code: 'fn main() {\n    let xs: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!("{xs:?}");\n}\n',
  python: "def f(a, b=2):\n\treturn a ** b  # power\n\n\nclass C(object):\n    pass\n",
  json: '{"id":"call_123","type":"function","function":{"name":"hub_call","arguments":"{\\"tool\\":\\"calc.eval\\",\\"args\\":{\\"expr\\":\\"2+2\\"}}"}}',
  cjk: "東京は日本の首都です。北京是中国的首都。서울은 한국의 수도입니다。",
  emoji: "Great job 👍🏽! 🚀🚀 Family: 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵 ❤️‍🔥",
  whitespace: "a  b   c    d\n\n\n  \t  e     \n   \r\n\r\nf          g \u00a0 h\u3000i   ",
  numbers: "3.14159 2026-11-27 1234567890 +44 20 7946 0958 0x1F 1e-9 ٣٤٥ ½ Ⅻ",
  mixed: "Ünïcödé naïve café – “quotes” ‘single’ — résumé/CV ÀÉÎ ŒUVRE straße ΑΒΓ αβγ Привет мир",
  urls: "See https://example.com/a/b?c=d&e=f#g and C:\\Users\\me\\file.txt or /usr/local/bin/",
  // One 6000-letter piece: long merges (and the hub's heap-ordered merge) on it.
  long: "Lorem".repeat(600) + "ipsumdolorsitamet".repeat(100) + "a".repeat(1300),
  marks: "e\u0301 a\u0308 क्षत्रिय ประเทศไทย العربية עברית",
};

let work;
const bin = process.env.WASMHUB_BIN;

before(() => {
  work = mkdtempSync(join(tmpdir(), "wasmhub-tokens-"));
  for (const [name, ranks] of [["o200k_base", o200k], ["cl100k_base", cl100k]]) {
    writeFileSync(join(work, `${name}.tiktoken`), tiktokenFile(ranks));
  }
  for (const [name, text] of Object.entries(corpus)) {
    writeFileSync(join(work, `${name}.txt`), text);
  }
  writeFileSync(join(work, "all.txt"), Object.values(corpus).join("\n"));
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
  const out = execFileSync(
    bin,
    ["tokens", "--tokenizer", spec, "--ids", "--set", `tokenizers.dir=${JSON.stringify(work)}`, ...files],
    { encoding: "utf8", cwd: work },
  );
  return out.split("\n").slice(0, files.length).map((l) => (l ? l.split(" ").map(Number) : []));
}

const names = [...Object.keys(corpus), "all"];
for (const [name, ranks, spec] of [
  ["o200k_base", o200k, "tiktoken:o200k_base"],
  ["cl100k_base", cl100k, "tiktoken:cl100k_base"],
  ["o200k_base", o200k, "file:o200k_base.tiktoken"],
]) {
  test(`wasmhub tokens --tokenizer ${spec} gives js-tiktoken's ids`, () => {
    const reference = new Tiktoken(ranks);
    const got = hubIds(spec, names.map((n) => `${n}.txt`));
    names.forEach((n, i) => {
      const text = n === "all" ? Object.values(corpus).join("\n") : corpus[n];
      assert.deepEqual(got[i], reference.encode(text), `${name} ids of ${n}`);
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
