#!/usr/bin/env python3
"""HF tokenizers and tiktoken encode throughput on the same documents as tokenizer_bench.cpp
(one thread each, GPT-2 vocabulary, ordinary encoding: special tokens are plain text).

    tokenizer_bench.py GPT2_TIKTOKEN CORPUS --hf-json OUT.json [--repeat N]

Writes the GPT-2 tokenizer.json it builds from the rank file (vocab + merges recovered the way
tiktoken's data_gym conversion inverts) so meshlm can be timed on the HF path too.
"""
import argparse
import base64
import json
import os
import time

os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"

import tiktoken  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
GPT2_PAT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def bytes_to_unicode():
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def bpe_parts(ranks, token, max_rank):
    parts = [bytes([b]) for b in token]
    while True:
        best = None
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and r < max_rank and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            return parts
        i = best[1]
        parts[i : i + 2] = [parts[i] + parts[i + 1]]


def gpt2_json(ranks):
    b2u = bytes_to_unicode()
    enc = lambda b: "".join(b2u[x] for x in b)  # noqa: E731
    merges = []
    for tok, r in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(tok) > 1:
            a, b = bpe_parts(ranks, tok, r)
            merges.append([enc(a), enc(b)])
    vocab = {enc(t): r for t, r in ranks.items()}
    vocab["<|endoftext|>"] = 50256
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": 50256, "content": "<|endoftext|>", "single_word": False,
                          "lstrip": False, "rstrip": False, "normalized": True, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
                  "byte_fallback": False, "ignore_merges": False, "vocab": vocab,
                  "merges": merges},
    }


def timeit(fn, docs, repeat):
    best, n = 1e30, 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        n = sum(len(fn(d)) for d in docs)
        best = min(best, time.perf_counter() - t0)
    return best, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tiktoken_file")
    ap.add_argument("corpus")
    ap.add_argument("--hf-json", required=True)
    ap.add_argument("--sep", default="%")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    ranks = {}
    for line in open(a.tiktoken_file, "rb"):
        if line.strip():
            t, r = line.split()
            ranks[base64.b64decode(t)] = int(r)
    if not os.path.exists(a.hf_json):
        with open(a.hf_json, "w") as f:
            json.dump(gpt2_json(ranks), f, ensure_ascii=False)
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
    tk = tiktoken.Encoding("gpt2", pat_str=PAT, mergeable_ranks=ranks,
                           special_tokens={"<|endoftext|>": 50256}, explicit_n_vocab=50257)
    hf = Tokenizer.from_file(a.hf_json)
    for name, fn in [("tiktoken", tk.encode_ordinary),
                     ("hf_tokenizers", lambda s: hf.encode(s, add_special_tokens=False).ids)]:
        s, n = timeit(fn, texts, a.repeat)
        print(f"{name}: {len(docs)} docs, {nbytes / 1e6:.2f} MB, {n} tokens, best of {a.repeat}: "
              f"{s:.3f} s, {nbytes / 1e6 / s:.2f} MB/s")


if __name__ == "__main__":
    main()
