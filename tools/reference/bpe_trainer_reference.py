#!/usr/bin/env python3
"""Reference fixtures for meshlm's native byte-level BPE trainer (tests/bpe_trainer_test.cpp).

Run in the venv with HF `tokenizers` (checked with tokenizers 0.23.3, CPython 3.11):

    .venv/bin/python tools/reference/bpe_trainer_reference.py [--meshlm build/meshlm | --json F]

It trains (or takes) meshlm's tokenizer.json for tests/fixtures/tokenizers/bpe_train_corpus.txt
(documents separated by '%' lines, vocab 400, special <|endoftext|>), then writes to
tests/fixtures/tokenizers/:
  bpe_trained.json   the tokenizer.json meshlm produced (the C++ test retrains and compares, so
                     any drift in the trainer shows up)
  bpe_trained.ids    HF `Tokenizer.from_file(bpe_trained.json).encode(doc).ids`, one line per
                     document (space-separated), then one line for the whole corpus text
and prints how close HF's own BpeTrainer (same documents, ByteLevel pre-tokenizer,
initial_alphabet=ByteLevel.alphabet()) comes to meshlm's merges.
"""
import argparse
import json
import pathlib
import shutil
import subprocess
import tempfile

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIX = ROOT / "tests/fixtures/tokenizers"
CORPUS = FIX / "bpe_train_corpus.txt"
VOCAB = 400
EOT = "<|endoftext|>"


def documents(text, separator="%"):
    """Like meshlm's split_text_documents: separator lines end documents, lines keep '\\n',
    whitespace-only documents are dropped."""
    docs, doc = [], []
    lines = text.split("\n")
    for line in [x + "\n" for x in lines[:-1]] + ([lines[-1]] if lines[-1] else []):
        bare = line[:-1] if line.endswith("\n") else line
        if bare.endswith("\r"):
            bare = bare[:-1]
        if bare == separator:
            docs.append("".join(doc))
            doc = []
        else:
            doc.append(line)
    docs.append("".join(doc))
    return [d for d in docs if d.strip(" \t\r\n")]


def hf_trained(docs, vocab_size):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOT],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(docs, trainer)
    return json.loads(tok.to_str())


def merges_of(j):
    return [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in j["model"]["merges"]]


def compare(ours, hf, label):
    a, b = merges_of(ours), merges_of(hf)
    prefix = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    common = len(set(a) & set(b))
    same_vocab = ours["model"]["vocab"] == hf["model"]["vocab"]
    print(f"{label}: meshlm {len(a)} merges, HF {len(b)}; identical prefix {prefix}; "
          f"common {common} ({100.0 * common / max(1, len(b)):.2f}%); vocab ids identical: "
          f"{same_vocab}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--meshlm", help="meshlm binary (default: build/meshlm)")
    ap.add_argument("--json", help="use this meshlm tokenizer.json instead of training")
    ap.add_argument("--compare-corpus", help="also compare with HF on this corpus ('%%' docs)")
    ap.add_argument("--compare-vocab", type=int, default=4096)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = args.json
        if not path:
            path = str(pathlib.Path(tmp) / "t.json")
            subprocess.run([args.meshlm or str(ROOT / "build/meshlm"), "train-tokenizer",
                            "--input", str(CORPUS), "--separator", "%", "--type", "bpe",
                            "--vocab-size", str(VOCAB), "--out", path, "--threads", "1"],
                           check=True)
        shutil.copyfile(path, FIX / "bpe_trained.json")

    text = CORPUS.read_bytes().decode("utf-8")  # no newline translation
    docs = documents(text)
    tok = Tokenizer.from_file(str(FIX / "bpe_trained.json"))
    with open(FIX / "bpe_trained.ids", "w") as f:
        f.write("# HF tokenizers ids of bpe_trained.json: one line per document of "
                "bpe_train_corpus.txt, then the whole file\n")
        for d in docs + [text]:
            ids = tok.encode(d).ids
            assert tok.decode(ids) == d
            f.write(" ".join(map(str, ids)) + "\n")
    ours = json.loads((FIX / "bpe_trained.json").read_text(encoding="utf-8"))
    compare(ours, hf_trained(docs, VOCAB), "fixture corpus")

    if args.compare_corpus:
        raw = pathlib.Path(args.compare_corpus).read_bytes().decode("utf-8", errors="replace")
        with tempfile.TemporaryDirectory() as tmp:
            p = pathlib.Path(tmp) / "c.txt"
            p.write_text(raw, encoding="utf-8")
            out = pathlib.Path(tmp) / "c.json"
            subprocess.run([args.meshlm or str(ROOT / "build/meshlm"), "train-tokenizer",
                            "--input", str(p), "--separator", "%", "--type", "bpe",
                            "--vocab-size", str(args.compare_vocab), "--out", str(out)],
                           check=True, capture_output=True)
            ours = json.loads(out.read_text(encoding="utf-8"))
        compare(ours, hf_trained(documents(raw), args.compare_vocab), args.compare_corpus)


if __name__ == "__main__":
    main()
