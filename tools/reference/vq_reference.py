#!/usr/bin/env python3
"""Independent float64 reference for meshlm's Transformer-VQ sublayer (fixture generator).

The sublayer (seed 001's single-head gated attention, model/vq_attention.h) written out op by op
in plain torch, as QUADRATIC causal softmax attention over the whole sequence -- no blocks, no
compressed cache (the C++ code computes the same thing in linear time). For input x (B, T, C):

    xn = x * rsqrt(mean(x^2) + eps) * ln_w
    q | k = xn w_qk^T;  q = rmsnorm(q) dk^-1/4, k = rmsnorm(k) dk^-1/4      (no gains)
    v | g = silu(xn w_vg^T)
    codebook = c_sum / max(c_count, 0.01)                                   (no gradient)
    z_t = argmin_s |k_t - codebook_s|^2 (lowest index on ties),  e_t = |k_t - codebook_z|^2
    s(i, j) = (q_i + u dk^-1/4) . key(i, j) + [i - j <= L] (q_i + vb dk^-1/4) . rel_{i-j},  j <= i
        rel_d = phi(d) w_r^T dk^-1/4,  phi(d) = [sin(d w_j) | cos(d w_j)],  w_j = lam^(-2j/C)
    res = ((softmax_j(s) v) * g) w_o^T                                      (no "+ x")
    J = sum(res * dres) + c_beta * mean_t e_t

key(i, j) has the value codebook_z_j; its gradient (the straight-through estimator, key + k -
sg(k)) reaches k_j by one of two rules (--key-grad):

    window (default, what meshlm implements): from the queries i of j's block and the next one
        only (block index i // L <= j // L + 1). An older query reads key j through the
        compressed cache, which holds the codeword itself (seed 001 stops the codebook's
        gradient), so the straight-through gradient skips it.
    all: from every query i >= j (the textbook straight-through estimator on the quadratic
        attention). meshlm's linear-time backward does not compute this one.

Either way the forward is the same, and L enters it only through the position-bias window.

Each fixture holds the inputs, every parameter (param.*), res, q, k, v, g, the codes z, the
commitment loss, the gradient of J with respect to x and to every trained parameter (grad.*),
and the batch's codebook statistics (stat.sum: per code the sum of its keys, stat.count: how
many). Inputs and parameters are rounded to float32 (what the fixture stores) before anything is
computed from them; all arithmetic is float64.

Checks before writing:
  * a second forward built from torch's library ops (F.rms_norm, F.silu, F.linear, F.softmax
    with an additive -inf mask) gives the same res, q, k, v, g, codes and commitment loss;
  * central finite differences (step 1e-6) of J for random elements of x and of every trained
    parameter against autograd. The straight-through gradient is not a derivative of the
    forward, so the differences are taken of the surrogate in which the straight-through term
    is k - k0 with k0 the unperturbed keys held fixed: its value at the draw equals J, and its
    derivative is by definition the straight-through gradient. (Parameters that do not feed the
    keys -- w_vg, w_r, u, vb, w_o -- leave k = k0, so for them this is J itself.) Every
    perturbation must leave every code unchanged (asserted; the draw guarantees each key's
    nearest code wins by at least 1e-3).

Run from the repository root with the reference venv (tools/reference/setup_venv.sh):

    .venv/bin/python tools/reference/vq_reference.py --out-dir tests/fixtures/vq

(`--case NAME` regenerates one case only.) See tools/reference/README.md for the contents.
"""

import argparse
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
FD_STEP = 1e-6
MIN_MARGIN = 1e-3  # second-nearest minus nearest squared distance, every key
MIN_CODES = 3

# name: B, T, C, dk, dv, S, L
CASES = {
    "shga": (2, 24, 16, 8, 32, 6, 4),             # six blocks: the cache is exercised
    "shga_partial": (2, 22, 16, 8, 32, 6, 4),     # the last block partial
    "shga_long_window": (1, 20, 16, 8, 16, 5, 8),  # blocks of 8
}
PARAMS = ["ln_w", "w_qk", "w_vg", "w_r", "u", "vb", "w_o"]  # the ones with a gradient


def f32(t):
    """Round to float32 and widen back: the float64 reference starts from the stored numbers."""
    return t.float().double()


def rms(t, eps=EPS):
    return t * torch.rsqrt((t * t).mean(-1, keepdim=True) + eps)


def silu(t):
    return t * torch.sigmoid(t)


def sinusoids(C, L):
    """phi(d) for d = 0..L: (L + 1, C), sines then cosines."""
    d = torch.arange(L + 1, dtype=F64)[:, None]
    w = LAM ** (-2.0 * torch.arange(C // 2, dtype=F64) / C)
    return torch.cat([torch.sin(d * w), torch.cos(d * w)], dim=1)


def codebook(p):
    return (p["c_sum"] / torch.clamp(p["c_count"], min=0.01)[:, None]).detach()


def ste_reach(T, L, key_grad):
    """(T, T) bool: query i's straight-through gradient reaches key j (j <= i assumed)."""
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    if key_grad == "all":
        return torch.ones(T, T, dtype=torch.bool)
    return (j // L) >= (i // L) - 1  # j in i's block or the one before


def forward(p, x, dims, key_grad, anchor=None):
    """The sublayer, op by op. anchor: the keys the straight-through term subtracts (None =
    k.detach(), the real estimator; a fixed tensor = the finite-difference surrogate)."""
    B, T, C, dk, dv, S, L = dims
    s4 = dk ** -0.25
    xn = rms(x) * p["ln_w"]
    qk = xn @ p["w_qk"].T
    q, k = rms(qk[..., :dk]) * s4, rms(qk[..., dk:]) * s4
    vg = xn @ p["w_vg"].T
    v, g = silu(vg[..., :dv]), silu(vg[..., dv:])
    cb = codebook(p)
    dist = ((k.detach()[..., None, :] - cb) ** 2).sum(-1)  # (B, T, S)
    z = dist.argmin(-1)  # first minimum: lowest index on ties
    cz = cb[z]
    e = ((k - cz) ** 2).sum(-1)  # carries gradient into k
    ste = k - (k.detach() if anchor is None else anchor)  # value 0 (at the draw), gradient 1
    rel = sinusoids(C, L) @ p["w_r"].T * s4  # (L + 1, dk)
    qu, qv = q + p["u"] * s4, q + p["vb"] * s4
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    content = qu @ cz.transpose(-1, -2) + (qu @ ste.transpose(-1, -2)) * ste_reach(T, L, key_grad)
    pos = torch.gather(qv @ rel.T, -1, (i - j).clamp(min=0, max=L).expand(B, T, T))
    scores = content + pos * ((i - j) <= L)
    causal = j <= i
    m = scores.masked_fill(~causal, -1e300).amax(-1, keepdim=True)
    a = torch.exp(scores - m) * causal
    att = a / a.sum(-1, keepdim=True)
    res = ((att @ v) * g) @ p["w_o"].T
    return dict(res=res, q=q, k=k, v=v, g=g, z=z, commit=e.mean(), dist=dist)


def library_forward(p, x, dims):
    """The same forward from torch's library ops (no gradient rule: values only)."""
    B, T, C, dk, dv, S, L = dims
    s4 = dk ** -0.25
    xn = F.rms_norm(x, (C,), p["ln_w"], EPS)
    q_raw, k_raw = F.linear(xn, p["w_qk"]).split([dk, dk], dim=-1)
    q, k = F.rms_norm(q_raw, (dk,), None, EPS) * s4, F.rms_norm(k_raw, (dk,), None, EPS) * s4
    v, g = F.silu(F.linear(xn, p["w_vg"])).split([dv, dv], dim=-1)
    cb = codebook(p)
    dist = torch.cdist(k.reshape(-1, dk), cb).square().reshape(B, T, S)
    z = dist.argmin(-1)
    kh = F.embedding(z, cb)
    commit = F.mse_loss(k, kh, reduction="sum") / (B * T)
    # Position term as a (T, T) table of phi(i - j) for every pair, zero beyond distance L.
    delta = (torch.arange(T)[:, None] - torch.arange(T)[None, :]).to(F64)
    w = LAM ** (-2.0 * torch.arange(C // 2, dtype=F64) / C)
    phi = torch.cat([torch.sin(delta[..., None] * w), torch.cos(delta[..., None] * w)], -1)
    rel = F.linear(phi, p["w_r"]) * s4  # (T, T, dk)
    near = (delta >= 0) & (delta <= L)
    scores = torch.einsum("btd,bsd->bts", q + p["u"] * s4, kh) \
        + torch.einsum("btd,tsd->bts", q + p["vb"] * s4, rel) * near
    mask = torch.zeros(T, T, dtype=F64).masked_fill(delta < 0, float("-inf"))
    att = F.softmax(scores + mask, dim=-1)
    res = F.linear(torch.bmm(att, v) * g, p["w_o"])
    return dict(res=res, q=q, k=k, v=v, g=g, z=z, commit=commit)


def objective(p, x, dres, dims, key_grad, anchor=None):
    f = forward(p, x, dims, key_grad, anchor)
    return (f["res"] * dres).sum() + C_BETA * f["commit"], f


def draw(name, seed):
    """Inputs and parameters of a case: the first draw (seed, seed + 1, ...) whose codes are
    unambiguous and varied enough. Returns (p, x, dres, gen, attempt seed, margin, codes used)."""
    dims = CASES[name]
    B, T, C, dk, dv, S, L = dims
    for attempt in range(100):
        case_seed = seed + 1000 * list(CASES).index(name) + attempt
        gen = torch.Generator().manual_seed(case_seed)

        def randn(*shape, std=1.0):
            return torch.randn(*shape, generator=gen, dtype=F64) * std

        p = {"ln_w": 1 + 0.1 * randn(C), "w_qk": randn(2 * dk, C, std=C ** -0.5),
             "w_vg": randn(2 * dv, C, std=C ** -0.5), "w_r": randn(dk, C, std=C ** -0.5),
             "u": 0.3 * randn(dk), "vb": 0.3 * randn(dk), "w_o": randn(C, dv, std=dv ** -0.5)}
        p = {n: f32(t) for n, t in p.items()}
        x = f32(randn(B, T, C))
        dres = f32(randn(B, T, C))
        # A codebook near real keys: the keys of a provisional forward with an all-zero codebook
        # (the keys do not depend on it), S of them picked at random and jittered; counts
        # uniform in [0.5, 3), the last one below the 0.01 clamp.
        p["c_sum"], p["c_count"] = torch.zeros(S, dk, dtype=F64), torch.ones(S, dtype=F64)
        keys = forward(p, x, dims, "window")["k"].detach().reshape(-1, dk)
        pick = torch.randperm(keys.shape[0], generator=gen)[:S]
        count = 0.5 + 2.5 * torch.rand(S, generator=gen, dtype=F64)
        count[S - 1] = 0.004
        p["c_count"] = f32(count)
        p["c_sum"] = f32(torch.clamp(p["c_count"], min=0.01)[:, None]
                         * (keys[pick] + 0.05 * randn(S, dk)))
        f = forward(p, x, dims, "window")
        d2 = f["dist"].sort(-1).values
        margin = (d2[..., 1] - d2[..., 0]).min().item()
        used = len(set(f["z"].flatten().tolist()))
        if margin >= MIN_MARGIN and used >= MIN_CODES:
            return p, x, dres, gen, case_seed, margin, used
    raise RuntimeError(f"{name}: no draw with unambiguous codes")


def make_case(name, out_dir, seed, key_grad):
    dims = CASES[name]
    B, T, C, dk, dv, S, L = dims
    p, x, dres, gen, case_seed, margin, used = draw(name, seed)

    leaves = {n: p[n].clone().requires_grad_(True) for n in PARAMS}
    xg = x.clone().requires_grad_(True)
    J, f = objective(dict(p, **leaves), xg, dres, dims, key_grad)
    grads = torch.autograd.grad(J, [xg] + [leaves[n] for n in PARAMS])
    grad = dict(zip(["x"] + PARAMS, grads))
    f = {n: t.detach() for n, t in f.items()}

    # Library-op forward.
    lib = library_forward(p, x, dims)
    assert torch.equal(lib["z"], f["z"]), "codes differ"
    lib_err = max((lib[n] - f[n]).abs().max().item() / f[n].abs().max().item()
                  for n in ("res", "q", "k", "v", "g", "commit"))
    assert lib_err < 1e-12, lib_err

    # Central differences of the surrogate (straight-through term k - k0, k0 fixed), the codes
    # held by the draw's margin (asserted).
    k0 = f["k"]
    fd_err = {}
    for n in ["x"] + PARAMS:
        base = x if n == "x" else p[n]
        err = 0.0
        for _ in range(4):
            idx = tuple(int(torch.randint(0, s, (1,), generator=gen)) for s in base.shape)
            Js = []
            for sign in (1, -1):
                t = base.clone()
                t[idx] += sign * FD_STEP
                q, xx = (dict(p), t) if n == "x" else (dict(p, **{n: t}), x)
                Jp, fp = objective(q, xx, dres, dims, key_grad, anchor=k0)
                assert torch.equal(fp["z"], f["z"]), f"{n}{idx}: a code moved"
                Js.append(Jp.item())
            fd = (Js[0] - Js[1]) / (2 * FD_STEP)
            err = max(err, abs(fd - grad[n][idx].item()) / (1 + abs(fd)))
        fd_err[n] = err
    assert max(fd_err.values()) < 1e-7, fd_err

    def out32(t):
        return t.detach().to(torch.float32).numpy().astype("<f4")

    tensors = {"x": out32(x), "dres": out32(dres)}
    for n in PARAMS + ["c_sum", "c_count"]:
        tensors["param." + n] = out32(p[n])
    for n in ("res", "q", "k", "v", "g"):
        tensors[n] = out32(f[n])
    tensors["z"] = f["z"].numpy().astype("<i4")
    tensors["commit"] = out32(f["commit"].reshape(1))
    for n in ["x"] + PARAMS:
        tensors["grad." + n] = out32(grad[n])
    zf = f["z"].flatten()
    stat_sum = torch.zeros(S, dk, dtype=F64).index_add_(0, zf, f["k"].reshape(-1, dk))
    stat_count = torch.zeros(S, dtype=F64).index_add_(0, zf, torch.ones(zf.shape, dtype=F64))
    tensors["stat.sum"] = out32(stat_sum)
    tensors["stat.count"] = out32(stat_count)
    metadata = dict(C=str(C), dk=str(dk), dv=str(dv), S=str(S), L=str(L), B=str(B), T=str(T),
                    eps=repr(EPS), lam=repr(LAM), c_beta=repr(C_BETA), key_grad=key_grad,
                    case=name, seed=str(case_seed),
                    generator=f"tools/reference/vq_reference.py (torch {torch.__version__}, "
                              f"float64)")
    path = os.path.join(out_dir, name + ".safetensors")
    save_safetensors(path, tensors, metadata)
    back = load_file(path)
    assert set(back) == set(tensors)
    assert all(np.array_equal(back[k], v) for k, v in tensors.items())
    counts = torch.bincount(zf, minlength=S).tolist()
    print(f"{name:17s} {os.path.getsize(path):6d} B  seed {case_seed}  codes used {used}/{S} "
          f"(counts {counts})  argmin margin {margin:.1e}  commit {f['commit'].item():.4f}")
    print(f"{'':17s} library forward {lib_err:.1e}; finite differences (|fd - autograd| / "
          f"(1 + |fd|)): " + ", ".join(f"{n} {e:.1e}" for n, e in fd_err.items()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", default="tests/fixtures/vq")
    ap.add_argument("--case", action="append", choices=list(CASES))
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--key-grad", choices=["window", "all"], default="window",
                    help="which queries' straight-through gradient reaches a key (see above)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    os.makedirs(args.out_dir, exist_ok=True)
    for name in args.case or CASES:
        make_case(name, args.out_dir, args.seed, args.key_grad)


if __name__ == "__main__":
    main()
