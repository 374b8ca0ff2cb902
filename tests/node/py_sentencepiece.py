"""Trains small SentencePiece models and prints the reference ids for tokens-sentencepiece.test.mjs.

Usage: py_sentencepiece.py train CORPUS OUT_PREFIX KIND
       py_sentencepiece.py ids MODEL FILE...

KIND is `gemma` (BPE, byte fallback, identity normalizer, no dummy prefix, extra
whitespace kept, split digits, user-defined symbols: how Gemma's tokenizer.model is
configured) or `nfkc` (BPE with sentencepiece's defaults: the nmt_nfkc character map,
dummy prefix, extra whitespace removed, byte fallback), `unigram` (a unigram model
with the defaults, no byte fallback: unknown text is the unknown id) or `word`. `ids` prints one JSON array of
`sp.encode` ids per FILE (UTF-8 text), one per line.
"""
import json
import sys

import sentencepiece as spm


def train(corpus, prefix, kind):
    options = dict(
        input=corpus,
        model_prefix=prefix,
        model_type="bpe",
        vocab_size=1200,
        hard_vocab_limit=False,
        byte_fallback=True,
        character_coverage=0.9995,
        num_threads=1,
        minloglevel=2,
    )
    if kind == "gemma":
        options.update(
            normalization_rule_name="identity",
            add_dummy_prefix=False,
            remove_extra_whitespaces=False,
            split_digits=True,
            allow_whitespace_only_pieces=True,
            user_defined_symbols=["\n\n", "<start_of_turn>", "<end_of_turn>", "\t\t", "```"],
        )
    elif kind in ("unigram", "word"):
        options.update(model_type=kind, byte_fallback=False, user_defined_symbols=["<start_of_turn>"])
    elif kind != "nfkc":
        raise SystemExit(f"unknown kind {kind}")
    spm.SentencePieceTrainer.train(**options)


def ids(model, files):
    sp = spm.SentencePieceProcessor(model_file=model)
    for name in files:
        with open(name, encoding="utf-8", newline="") as f:
            print(json.dumps(sp.encode(f.read())))


if __name__ == "__main__":
    if sys.argv[1] == "train":
        train(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "ids":
        ids(sys.argv[2], sys.argv[3:])
    else:
        raise SystemExit(__doc__)
