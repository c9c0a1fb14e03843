#!/usr/bin/env python3
"""HF tokenizers encode throughput, one thread, for tokenizer.json files on the same documents as
tokenizer_bench.cpp (split by --sep lines): encode(doc, add_special_tokens=False) one document
at a time (no encode_batch), the way meshlm's tokenizer_bench encodes.

    tokenizer_families_bench.py CORPUS FAMILY.json... [--repeat N]

Prints one line a file: "<name>: ... MB/s".
"""
import argparse
import os
import time

os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"

from tokenizers import Tokenizer  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--sep", default="%")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    docs, cur = [], []
    for line in open(a.corpus, "rb"):
        if line.rstrip(b"\n") == a.sep.encode():
            docs.append(b"".join(cur))
            cur = []
        else:
            cur.append(line if line.endswith(b"\n") else line + b"\n")
    docs.append(b"".join(cur))
    nbytes = sum(len(d) for d in docs)
    texts = [d.decode("utf-8", errors="replace") for d in docs]
    for path in a.files:
        tok = Tokenizer.from_file(path)
        best, n = 1e30, 0
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            n = sum(len(tok.encode(t, add_special_tokens=False).ids) for t in texts)
            best = min(best, time.perf_counter() - t0)
        name = os.path.splitext(os.path.basename(path))[0]
        print(f"{name}: {len(docs)} docs, {nbytes / 1e6:.2f} MB, {n} tokens, best of {a.repeat}: "
              f"{best:.3f} s, {nbytes / 1e6 / best:.2f} MB/s")


if __name__ == "__main__":
    main()
