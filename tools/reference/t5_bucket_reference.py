"""T5's causal relative-position buckets from transformers (T5Attention._relative_position_bucket
with bidirectional=False, the decoder's rule and seed 003's) for tests/t5_bias_test.cpp:

    .venv/bin/python tools/reference/t5_bucket_reference.py --out tests/fixtures/t5_buckets.txt

One line per (num_buckets, max_distance): the two, then the bucket of every distance
0..N-1 (query position minus key position).
"""
import argparse

import torch
from transformers.models.t5.modeling_t5 import T5Attention

SETTINGS = [(32, 128), (8, 12), (16, 64), (64, 1024)]
N = 1200


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rel = -torch.arange(N)[None, :]  # key position - query position
    lines = ["# tools/reference/t5_bucket_reference.py: transformers' T5 buckets, causal"]
    for nb, md in SETTINGS:
        b = T5Attention._relative_position_bucket(rel, False, nb, md)[0].tolist()
        assert b[-1] == nb - 1 or N <= md
        lines.append(f"{nb} {md} " + " ".join(map(str, b)))
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
