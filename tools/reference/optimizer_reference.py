"""Reference steps of the Lion optimizer for tests/optimizer_test.cpp.

Lion as in Chen et al. 2023 ("Symbolic Discovery of Optimization Algorithms", Program 1) and
optax.lion, written here with torch ops in float64 (independent of meshlm's kernel):
    c = b1 * m + (1 - b1) * g;  p = p - lr * (sign(c) + wd * p);  m = b2 * m + (1 - b2) * g
Writes tests/fixtures/lion_steps.safetensors: for each case k, the start p0_k, the gradients
g_k (steps x n) and the parameters / momentum after every step (p_k, m_k: steps x n).

    .venv/bin/python tools/reference/optimizer_reference.py
"""
import os

import torch
from safetensors.torch import save_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
N, STEPS = 257, 6
CASES = [  # lr, beta1, beta2, weight decay
    (1e-2, 0.9, 0.99, 0.0),
    (3e-3, 0.95, 0.98, 0.1),
]


def lion_step(p, g, m, lr, b1, b2, wd):
    c = b1 * m + (1 - b1) * g
    p = p - lr * (torch.sign(c) + wd * p)
    m = b2 * m + (1 - b2) * g
    return p, m


def main():
    gen = torch.Generator().manual_seed(2023)
    out = {}
    for k, (lr, b1, b2, wd) in enumerate(CASES):
        p = torch.randn(N, generator=gen, dtype=torch.float64).float().double()
        p0 = p.clone()
        m = torch.zeros(N, dtype=torch.float64)
        gs, ps, ms = [], [], []
        for step in range(STEPS):
            g = (0.1 * torch.randn(N, generator=gen, dtype=torch.float64)).float().double()
            g[0] = 0.0  # no gradient: sign(b1 m) only, and decay
            p, m = lion_step(p, g, m, lr, b1, b2, wd)
            gs.append(g), ps.append(p.clone()), ms.append(m.clone())
        out[f"p0_{k}"] = p0.float()
        out[f"g_{k}"] = torch.stack(gs).float()
        out[f"p_{k}"] = torch.stack(ps).float()  # computed in float64, stored as f32
        out[f"m_{k}"] = torch.stack(ms).float()
        out[f"hyper_{k}"] = torch.tensor([lr, b1, b2, wd], dtype=torch.float32)
    path = os.path.join(ROOT, "tests", "fixtures", "lion_steps.safetensors")
    save_file(out, path, metadata={"steps": str(STEPS), "n": str(N), "cases": str(len(CASES))})
    print("wrote", path)


if __name__ == "__main__":
    main()
