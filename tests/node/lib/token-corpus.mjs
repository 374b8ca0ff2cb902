// The corpus the tokenizer tests compare `wasmhub tokens` with reference tokenizers
// on: English, contractions, code, JSON, CJK, emoji, whitespace runs, numbers, accents,
// combining marks and one long piece; and helpers to write it out and run the hub.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

export const corpus = {
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

export const names = [...Object.keys(corpus), "all"];

export function text(name) {
  return name === "all" ? Object.values(corpus).join("\n") : corpus[name];
}

// Writes every corpus entry (and all of them joined) as NAME.txt into `work`.
export function writeCorpus(work) {
  for (const name of names) {
    writeFileSync(join(work, `${name}.txt`), text(name));
  }
}

// The ids `wasmhub tokens --ids` gives for `files` (in `work`, which is also the
// tokenizers.dir), one array per file.
export function hubIds(work, spec, files) {
  const out = execFileSync(
    process.env.WASMHUB_BIN,
    ["tokens", "--tokenizer", spec, "--ids", "--set", `tokenizers.dir=${JSON.stringify(work)}`, ...files],
    { encoding: "utf8", cwd: work },
  );
  return out.split("\n").slice(0, files.length).map((l) => (l ? l.split(" ").map(Number) : []));
}
