#!/usr/bin/env python3
"""Independent float64 reference for meshlm's Transformer-VQ sublayer (fixture generator).

The sublayer (seed 001's single-head gated attention, model/vq_attention.h) written out op by op
in plain torch, as QUADRATIC causal softmax attention over the whole sequence -- no blocks, no
compressed cache (the C++ code computes the same thing in linear time). For input x (B, T, C):

    xn = x * rsqrt(mean(x^2) + eps) * ln_w
    q | k = xn w_qk^T;  q = rmsnorm(q) dk^-1/4, k = rmsnorm(k) dk^-1/4      (no gains)
    v | g = silu(xn w_vg^T)
    codebook = c_sum / max(c_count, 0.01)                                   (no gradient)
    z_t = argmin_s |k_t - codebook_s|^2,  e_t = |k_t - codebook_z|^2
    s(i, j) = (q_i + u dk^-1/4) . key(i, j) + [i - j <= L] (q_i + vb dk^-1/4) . rel_{i-j},  j <= i
        key(i, j) = codebook_z_j + (k_j - sg(k_j))  (straight-through) when j's block is i's or
                    the one before; else codebook_z_j alone: an older key reaches the query
                    through the compressed cache, which holds codewords (seed 001 stops the
                    codebook's gradient), so the straight-through gradient skips it
        rel_d = phi(d) w_r^T dk^-1/4,  phi(d) = [sin(d w_j) | cos(d w_j)],  w_j = lam^(-2j/C)
    res = ((softmax(s) v) * g) w_o^T
    J = sum(res * dres) + c_beta * mean_t e_t

Each fixture holds the inputs, every parameter (param.*), res, q, k, v, g, the codes z, the
commitment loss, the gradient of J with respect to x and to every trained parameter (grad.*),
and the batch's codebook statistics (stat.sum: per code the sum of its keys, stat.count: how
many). Before writing, the gradients of the parameters that do not feed the keys are checked
against central finite differences (the keys' straight-through gradient is not a derivative of
the forward), and the forward against a second one built from torch's library ops.

Run from the repository root with the reference venv (tools/reference/setup_venv.sh):

    .venv/bin/python tools/reference/vq_reference.py --out-dir tests/fixtures/vq
"""

import argparse
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.numpy import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from transformer_reference import save_safetensors  # noqa: E402

F64 = torch.float64
SEED = 2024
EPS, LAM, C_BETA = 1e-5, 100000.0, 0.25

# name: B, T, C, dk, dv, S, L
CASES = {
    "shga": (2, 24, 16, 8, 32, 6, 4),             # six blocks: the cache is exercised
    "shga_partial": (2, 22, 16, 8, 32, 6, 4),     # the last block partial
    "shga_long_window": (1, 20, 16, 8, 16, 5, 8),  # blocks of 8
}
PARAMS = ["ln_w", "w_qk", "w_vg", "w_r", "u", "vb", "w_o"]


def rms(t, eps=EPS):
    return t * torch.rsqrt((t * t).mean(-1, keepdim=True) + eps)


def sinusoids(C, L):
    d = torch.arange(L + 1, dtype=F64)[:, None]
    w = LAM ** (-2.0 * torch.arange(C // 2, dtype=F64) / C)
    return torch.cat([torch.sin(d * w), torch.cos(d * w)], dim=1)


def forward(p, x, dims, library=False):
    B, T, C, dk, dv, S, L = dims
    s4 = dk ** -0.25
    if library:
        xn = F.rms_norm(x, (C,), p["ln_w"], EPS)
    else:
        xn = rms(x) * p["ln_w"]
    qk = xn @ p["w_qk"].T
    q, k = (F.rms_norm(t, (dk,), None, EPS) if library else rms(t) for t in (qk[..., :dk], qk[..., dk:]))
    q, k = q * s4, k * s4
    vg = xn @ p["w_vg"].T
    if library:
        v, g = F.silu(vg[..., :dv]), F.silu(vg[..., dv:])
    else:
        v, g = (t * torch.sigmoid(t) for t in (vg[..., :dv], vg[..., dv:]))
    cb = (p["c_sum"] / torch.clamp(p["c_count"], min=0.01)[:, None]).detach()
    dist = ((k.detach()[..., None, :] - cb) ** 2).sum(-1)  # (B, T, S)
    z = dist.argmin(-1)
    e = ((k - cb[z]) ** 2).sum(-1)
    cz = cb[z]
    ste = k - k.detach()  # zero value, identity gradient
    rel = sinusoids(C, L) @ p["w_r"].T * s4  # (L + 1, dk)
    qu, qv = q + p["u"] * s4, q + p["vb"] * s4
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    near = (j // L) >= (i // L) - 1  # key in the query's window: straight-through reaches it
    content = qu @ cz.transpose(-1, -2) + (qu @ ste.transpose(-1, -2)) * near
    dist_ij = (i - j).clamp(min=0, max=L)
    pos = torch.gather(qv @ rel.T, -1, dist_ij.expand(B, T, T))
    scores = content + pos * ((i - j) <= L)
    causal = j <= i
    if library:
        att = F.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
    else:
        m = scores.masked_fill(~causal, -1e300).amax(-1, keepdim=True)
        a = torch.exp(scores - m) * causal
        att = a / a.sum(-1, keepdim=True)
    o = att @ v
    res = (o * g) @ p["w_o"].T
    return dict(res=res, q=q, k=k, v=v, g=g, z=z, commit=e.mean(), dist=dist)


def objective(p, x, dres, dims):
    f = forward(p, x, dims)
    return (f["res"] * dres).sum() + C_BETA * f["commit"], f


def make_case(name, out_dir, seed):
    dims = CASES[name]
    B, T, C, dk, dv, S, L = dims
    for attempt in range(100):
        gen = torch.Generator().manual_seed(seed + 1000 * list(CASES).index(name) + attempt)

        def randn(*shape, std=1.0):
            return torch.randn(*shape, generator=gen, dtype=F64) * std

        p = {"ln_w": 1 + 0.1 * randn(C), "w_qk": randn(2 * dk, C, std=C ** -0.5),
             "w_vg": randn(2 * dv, C, std=C ** -0.5), "w_r": randn(dk, C, std=C ** -0.5),
             "u": 0.3 * randn(dk), "vb": 0.3 * randn(dk), "w_o": randn(C, dv, std=dv ** -0.5)}
        x = randn(B, T, C)
        dres = randn(B, T, C)
        # A codebook near real keys: each code a jittered key of this batch, one count below the
        # 0.01 clamp.
        p["c_sum"], p["c_count"] = torch.zeros(S, dk, dtype=F64), torch.ones(S, dtype=F64)
        keys = forward(p, x, dims)["k"].detach().reshape(-1, dk)
        pick = torch.randperm(keys.shape[0], generator=gen)[:S]
        count = 0.5 + 2.5 * torch.rand(S, generator=gen, dtype=F64)
        count[S - 1] = 0.004
        p["c_count"] = count
        p["c_sum"] = torch.clamp(count, min=0.01)[:, None] * (keys[pick] + 0.05 * randn(S, dk))
        f = forward(p, x, dims)
        d2 = f["dist"].sort(-1).values
        margin = (d2[..., 1] - d2[..., 0]).min().item()
        used = len(set(f["z"].flatten().tolist()))
        if margin >= 1e-3 and used >= 3:
            break
    else:
        raise RuntimeError(f"{name}: no draw with unambiguous codes")

    leaves = {n: p[n].clone().requires_grad_(True) for n in PARAMS}
    xg = x.clone().requires_grad_(True)
    full = dict(p, **leaves)
    J, f = objective(full, xg, dres, dims)
    grads = torch.autograd.grad(J, [xg] + [leaves[n] for n in PARAMS])
    grad = dict(zip(["x"] + PARAMS, grads))

    # Library-op forward.
    lib = forward(p, x, dims, library=True)
    lib_err = (lib["res"] - f["res"]).abs().max().item() / f["res"].abs().max().item()
    assert lib_err < 1e-12, lib_err
    # Central differences on random elements of the parameters that do not feed the keys (codes
    # must not move: the margin above keeps them). What feeds the keys (x, ln_w, w_qk) has the
    # straight-through gradient, which differences of the forward cannot see by design.
    fd_err = 0.0
    h = 1e-6
    for n in ["w_vg", "w_r", "u", "vb", "w_o"]:
        base = x if n == "x" else p[n]
        for _ in range(4):
            idx = tuple(int(torch.randint(0, s, (1,), generator=gen)) for s in base.shape)
            plus, minus = base.clone(), base.clone()
            plus[idx] += h
            minus[idx] -= h

            def J_at(t):
                q = dict(p)
                xx = x
                if n == "x":
                    xx = t
                else:
                    q[n] = t
                return objective(q, xx, dres, dims)[0].item()
            fd = (J_at(plus) - J_at(minus)) / (2 * h)
            fd_err = max(fd_err, abs(fd - grad[n][idx].item()) / (1 + abs(fd)))
    assert fd_err < 1e-6, fd_err

    def f32(t):
        return t.detach().to(torch.float32).numpy().astype("<f4")

    tensors = {"x": f32(x), "dres": f32(dres)}
    for n in PARAMS + ["c_sum", "c_count"]:
        tensors["param." + n] = f32(p[n])
    for n in ("res", "q", "k", "v", "g"):
        tensors[n] = f32(f[n])
    tensors["z"] = f["z"].numpy().astype("<i4")
    tensors["commit"] = f32(f["commit"].reshape(1))
    for n in ["x"] + PARAMS:
        tensors["grad." + n] = f32(grad[n])
    zf = f["z"].flatten()
    kf = f["k"].detach().reshape(-1, dk)
    stat_sum = torch.zeros(S, dk, dtype=F64).index_add_(0, zf, kf)
    stat_count = torch.zeros(S, dtype=F64).index_add_(0, zf, torch.ones_like(zf, dtype=F64))
    tensors["stat.sum"] = f32(stat_sum)
    tensors["stat.count"] = f32(stat_count)
    metadata = dict(B=str(B), T=str(T), C=str(C), dk=str(dk), dv=str(dv), S=str(S), L=str(L),
                    eps=repr(EPS), lam=repr(LAM), c_beta=repr(C_BETA), case=name,
                    seed=str(seed), generator=f"tools/reference/vq_reference.py "
                                              f"(torch {torch.__version__}, float64)")
    path = os.path.join(out_dir, name + ".safetensors")
    save_safetensors(path, tensors, metadata)
    back = load_file(path)
    assert set(back) == set(tensors)
    assert all(np.array_equal(back[k], v) for k, v in tensors.items())
    print(f"{name:17s} {os.path.getsize(path):6d} B  codes used {used}/{S}  "
          f"argmin margin {margin:.1e}  commit {f['commit'].item():.4f}  "
          f"checks: library {lib_err:.1e}, finite-diff {fd_err:.1e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", default="tests/fixtures/vq")
    ap.add_argument("--case", action="append", choices=list(CASES))
    ap.add_argument("--seed", type=int, default=SEED)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    os.makedirs(args.out_dir, exist_ok=True)
    for name in args.case or CASES:
        make_case(name, args.out_dir, args.seed)


if __name__ == "__main__":
    main()
