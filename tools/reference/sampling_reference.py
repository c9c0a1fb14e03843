"""Typical and eta sampling: the kept set and renormalized probabilities of transformers' own
logits warpers (Temperature, TopK, TopP, Typical, Eta, in generate()'s order), evaluated in
float64 on fixed float32 logits, for tests/sampler_filters_test.cpp.

    .venv/bin/python tools/reference/sampling_reference.py \
        --out tests/fixtures/sampling_reference.txt

Every case is checked to sit away from the filters' boundaries (the prefix mass against
top_p / typical_p, the probabilities against eta's cut), so float32 rounding on the C++ side
cannot flip a token in or out.
"""
import argparse
import math

import numpy as np
import torch
from transformers.generation.logits_process import (
    EtaLogitsWarper,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
    TypicalLogitsWarper,
)

V = 48
# (row, temperature, top_k, top_p, typical_p, eta_cutoff)
CASES = [
    (0, 1.0, 0, 1.0, 0.5, 0.0),
    (0, 0.7, 0, 1.0, 0.9, 0.0),
    (1, 1.0, 0, 1.0, 0.3, 0.0),
    (0, 1.0, 0, 1.0, 1.0, 0.02),
    (1, 1.3, 0, 1.0, 1.0, 0.2),
    (2, 1.0, 0, 1.0, 1.0, 0.05),
    (0, 0.8, 20, 0.9, 0.7, 0.0),
    (2, 1.0, 0, 0.95, 0.8, 0.01),
    (1, 0.9, 30, 0.97, 0.85, 0.03),
]


def logit_rows():
    rng = np.random.default_rng(2024)
    flat = rng.normal(0.0, 1.0, V)
    peaked = rng.normal(0.0, 2.5, V)
    heavy = np.log(1.0 / np.arange(1, V + 1)) + rng.normal(0.0, 0.3, V)  # Zipf-like
    return [np.asarray(r, dtype=np.float32) for r in (flat, peaked, heavy)]


def warp(z, T, top_k, top_p, typical_p, eta):
    scores = torch.tensor(z.astype(np.float64))[None, :]
    ids = torch.zeros((1, 1), dtype=torch.long)
    procs = [TemperatureLogitsWarper(T)]
    if top_k > 0:
        procs.append(TopKLogitsWarper(top_k))
    if top_p < 1:
        procs.append(TopPLogitsWarper(top_p))
    if typical_p < 1:
        procs.append(TypicalLogitsWarper(typical_p))
    if eta > 0:
        procs.append(EtaLogitsWarper(epsilon=eta))
    for p in procs:
        scores = p(ids, scores)
    return torch.softmax(scores, dim=-1)[0].numpy()


def check_prefix_margin(probs_in_order, mass, what):
    cum = np.cumsum(probs_in_order)
    gap = np.min(np.abs(cum - mass))
    assert gap > 1e-5, f"{what}: a prefix mass is {gap:.2e} from {mass}"


def margins(z, T, top_k, top_p, typical_p, eta):
    """Recomputes each filter's inputs and asserts the decisions are not close calls."""
    scores = torch.tensor(z.astype(np.float64))[None, :] / T
    ids = torch.zeros((1, 1), dtype=torch.long)
    if top_k > 0:
        scores = TopKLogitsWarper(top_k)(ids, scores)
    if top_p < 1:
        p = torch.softmax(scores, -1)[0].numpy()
        check_prefix_margin(np.sort(p)[::-1], top_p, "top_p")
        scores = TopPLogitsWarper(top_p)(ids, scores)
    if typical_p < 1:
        p = torch.softmax(scores, -1)[0].numpy()
        logp = np.log(np.where(p > 0, p, 1.0))
        ent = -np.sum(np.where(p > 0, p * logp, 0.0))
        dist = np.where(p > 0, np.abs(-logp - ent), np.inf)
        order = np.argsort(dist, kind="stable")
        check_prefix_margin(p[order], typical_p, "typical_p")
        scores = TypicalLogitsWarper(typical_p)(ids, scores)
    if eta > 0:
        p = torch.softmax(scores, -1)[0].numpy()
        ent = -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0))
        cut = min(eta, math.sqrt(eta) * math.exp(-ent))
        live = p[p > 0]
        gap = np.min(np.abs(live - cut) / cut)
        assert gap > 1e-4, f"eta: a probability is {gap:.2e} (relative) from the cut {cut}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows = logit_rows()
    lines = ["# tools/reference/sampling_reference.py: transformers' warpers in float64"]
    for r, z in enumerate(rows):
        lines.append(f"logits {r} " + " ".join(f"{float(x):.9g}" for x in z))
    for r, T, k, tp, typ, eta in CASES:
        margins(rows[r], T, k, tp, typ, eta)
        p = warp(rows[r], T, k, tp, typ, eta)
        kept = [(i, p[i]) for i in range(V) if p[i] > 0]
        assert abs(sum(q for _, q in kept) - 1) < 1e-12
        assert 1 < len(kept) < V, f"case {(r, T, k, tp, typ, eta)} keeps {len(kept)}: not a test"
        pairs = " ".join(f"{i}:{q:.17g}" for i, q in kept)
        lines.append(f"case {r} {T} {k} {tp} {typ} {eta} {len(kept)} {pairs}")
        print(f"row {r} T={T} top_k={k} top_p={tp} typical_p={typ} eta={eta}: keeps {len(kept)}")
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
