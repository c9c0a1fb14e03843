"""Reference steps of the Lion and Adafactor optimizers for tests/optimizer_test.cpp.

Lion as in Chen et al. 2023 ("Symbolic Discovery of Optimization Algorithms", Program 1) and
optax.lion, written here with torch ops in float64 (independent of meshlm's kernel):
    c = b1 * m + (1 - b1) * g;  p = p - lr * (sign(c) + wd * p);  m = b2 * m + (1 - b2) * g
Writes tests/fixtures/lion_steps.safetensors: for each case k, the start p0_k, the gradients
g_k (steps x n) and the parameters / momentum after every step (p_k, m_k: steps x n).

Adafactor is optax.adafactor itself (as seed 001 calls it: multiply_by_parameter_scale=True,
clipping_threshold=1.0, optax's other defaults; and a case with other settings), run by JAX in
float64 (jax_enable_x64) on float32-exact inputs. Writes tests/fixtures/adafactor_steps.safetensors
for the tensors of TENSORS (two factored matrices, one of each orientation, a small unfactored
matrix and a vector). To keep the file small the gradients are not stored per step: each tensor,
seen as rows x cols (a vector: n x 1), has a base G (f32) and per step row and column weights
a_t, b_t (f32), and
    g_t[i, j] = f32(a_t[i] * G[i, j] + b_t[j] * G[(i + 1) % rows, j])    (float64 arithmetic)
    p0[i, j]  = 8 * G[(i + 1) % rows, (j + 1) % cols]
which the test rebuilds bit for bit. Per case k and tensor X it stores the parameters after every
step at every `stride`-th flat element (ps_k_X: steps x ceil(n / stride); stride 1 below 1024
elements, else 17, which meets every row and column of the matrices), and the second-moment
state after every step: factored, the row statistics (vr_k_X: steps x rows, optax's v_col or v_row, whichever is
per row) and column statistics (vc_k_X: steps x cols); otherwise v sampled like p (v_k_X).

    .venv/bin/python tools/reference/optimizer_reference.py [lion | adafactor]
    (Lion needs torch, Adafactor jax and optax: pip install jax optax safetensors numpy)
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
N, STEPS = 257, 6
CASES = [  # lr, beta1, beta2, weight decay
    (1e-2, 0.9, 0.99, 0.0),
    (3e-3, 0.95, 0.98, 0.1),
]

AF_STEPS = 5
AF_TENSORS = [("A", (136, 128)), ("B", (128, 144)), ("S", (8, 12)), ("v", (33,))]
AF_CASES = [  # lr, decay_rate, clipping_threshold (0: None), multiply_by_parameter_scale
    (1e-2, 0.8, 1.0, True),  # seed 001
    (3e-3, 0.6, 0.0, False),
]


def lion_step(p, g, m, lr, b1, b2, wd):
    import torch

    c = b1 * m + (1 - b1) * g
    p = p - lr * (torch.sign(c) + wd * p)
    m = b2 * m + (1 - b2) * g
    return p, m


def lion():
    import torch
    from safetensors.torch import save_file

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


def af_matrix(shape):
    return (shape[0], shape[1] if len(shape) == 2 else 1)


def af_gradient(G, a, b):
    """g_t as the test rebuilds it: float64 products and sum, rounded to f32 once."""
    import numpy as np

    G = G.astype(np.float64)
    g = a.astype(np.float64)[:, None] * G + b.astype(np.float64)[None, :] * np.roll(G, -1, axis=0)
    return g.astype(np.float32)


def adafactor():
    import jax
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import optax
    from optax._src import factorized
    from safetensors.numpy import save_file

    rng = np.random.default_rng(2018)
    out = {}
    bases, weights = {}, {}
    for name, shape in AF_TENSORS:
        R, C = af_matrix(shape)
        G = (0.05 * rng.standard_normal((R, C))).astype(np.float32)
        G[0, 0] = G[1, 0] = 0.0  # g[0, 0] = 0 at every step: only eps in its statistics
        # Row and column weights per step: "A" grows (the update's RMS passes the clipping
        # threshold), the others shrink or wander.
        trend = {"A": 1.6, "B": 0.7, "S": 1.3, "v": 0.8}[name]
        a = np.stack([(trend**t) * (0.5 + rng.random(R)) for t in range(AF_STEPS)]).astype(np.float32)
        b = np.stack([0.5 + rng.random(C) for t in range(AF_STEPS)]).astype(np.float32)
        bases[name], weights[name] = G, (a, b)
        out[f"G_{name}"], out[f"a_{name}"], out[f"b_{name}"] = G.reshape(shape), a, b
    for k, (lr, decay, clip, scale) in enumerate(AF_CASES):
        opt = optax.adafactor(learning_rate=lr, decay_rate=decay,
                              clipping_threshold=clip if clip > 0 else None,
                              multiply_by_parameter_scale=scale)
        params = {}
        for name, shape in AF_TENSORS:
            G = bases[name]
            p0 = (8.0 * np.roll(np.roll(G.astype(np.float64), -1, axis=0), -1, axis=1))
            params[name] = jnp.asarray(p0.astype(np.float32).astype(np.float64).reshape(shape))
        state = opt.init(params)
        rec = {name: {"ps": [], "vr": [], "vc": [], "v": []} for name, _ in AF_TENSORS}
        for t in range(AF_STEPS):
            grads = {}
            for name, shape in AF_TENSORS:
                a, b = weights[name]
                grads[name] = jnp.asarray(
                    af_gradient(bases[name], a[t], b[t]).astype(np.float64).reshape(shape))
            updates, state = opt.update(grads, state, params)
            params = optax.apply_updates(params, updates)
            fs = state[0]  # scale_by_factored_rms's state
            for name, shape in AF_TENSORS:
                p = np.asarray(params[name]).reshape(-1)
                stride = 1 if p.size < 1024 else 17
                rec[name]["ps"].append(p[::stride])
                dims = factorized._factored_dims(shape, True, 128)
                if dims is None:
                    rec[name]["v"].append(np.asarray(fs.v[name]).reshape(-1)[::stride])
                    continue
                d1, d0 = dims
                vr, vc = np.asarray(fs.v_row[name]), np.asarray(fs.v_col[name])
                # optax's v_row is the mean over d0 (the larger dim): per column when d0 = 0.
                row, col = (vc, vr) if d0 == 0 else (vr, vc)
                rec[name]["vr"].append(row)
                rec[name]["vc"].append(col)
        for name, _ in AF_TENSORS:
            for key in ("ps", "vr", "vc", "v"):
                if rec[name][key]:
                    out[f"{key}_{k}_{name}"] = np.stack(rec[name][key]).astype(np.float32)
        out[f"hyper_{k}"] = np.array([lr, decay, clip, float(scale)], dtype=np.float32)
    path = os.path.join(ROOT, "tests", "fixtures", "adafactor_steps.safetensors")
    meta = {"steps": str(AF_STEPS), "cases": str(len(AF_CASES)),
            "tensors": ",".join(name for name, _ in AF_TENSORS),
            "optax": optax.__version__, "jax": jax.__version__}
    save_file(out, path, metadata=meta)
    print("wrote", path, "with optax", optax.__version__)


def main():
    which = sys.argv[1:] or ["lion", "adafactor"]
    for w in which:
        {"lion": lion, "adafactor": adafactor}[w]()


if __name__ == "__main__":
    main()
