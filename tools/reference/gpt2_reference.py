#!/usr/bin/python3
"""Independent PyTorch-autograd reference for a tiny GPT-2 (fixture generator).

The C++ engine checks its forward pass (logits, loss), every parameter
gradient, and 10 AdamW training steps against the tensors this script writes.
It deliberately shares no code with meshlm: the model is written from scratch
in plain torch ops, all arithmetic is float64 (the "truth"), and only the final
results are rounded to float32 for storage.

Run with Debian's PyTorch (torch 1.13, no transformers needed):

    /usr/bin/python3 tools/reference/gpt2_reference.py \
        --out tests/fixtures/gpt2_tiny.safetensors

See tools/reference/README.md for what the fixture contains.
"""

import argparse
import json
import math
import os
import struct

import numpy as np
import torch
import torch.nn.functional as F

# ---------------------------------------------------------------------------
# Configuration (all of it ends up in the fixture's __metadata__).
# ---------------------------------------------------------------------------
CFG = dict(n_layer=2, d_model=64, n_head=4, vocab_size=97, max_seq_len=16,
           batch=2, seq_len=16)
TRAIN = dict(steps=10, lr=1e-2, end_lr=1e-3, warmup_steps=3,
             weight_decay=0.1, beta1=0.9, beta2=0.95, eps=1e-8, grad_clip=1.0)
LN_EPS = 1e-5
SEED = 1234

F64 = torch.float64


# ---------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------
def param_shapes(cfg):
    """Ordered (name, shape) list; weights are [out, in] like nn.Linear."""
    C, V, P, L = cfg["d_model"], cfg["vocab_size"], cfg["max_seq_len"], cfg["n_layer"]
    shapes = [("wte.weight", (V, C)), ("wpe.weight", (P, C))]
    for l in range(L):
        p = f"h.{l}."
        shapes += [
            (p + "ln_1.weight", (C,)), (p + "ln_1.bias", (C,)),
            (p + "attn.c_attn.weight", (3 * C, C)), (p + "attn.c_attn.bias", (3 * C,)),
            (p + "attn.c_proj.weight", (C, C)), (p + "attn.c_proj.bias", (C,)),
            (p + "ln_2.weight", (C,)), (p + "ln_2.bias", (C,)),
            (p + "mlp.c_fc.weight", (4 * C, C)), (p + "mlp.c_fc.bias", (4 * C,)),
            (p + "mlp.c_proj.weight", (C, 4 * C)), (p + "mlp.c_proj.bias", (C,)),
        ]
    shapes += [("ln_f.weight", (C,)), ("ln_f.bias", (C,))]
    return shapes


def is_layernorm(name):
    return ".ln_" in name or name.startswith("ln_")


def init_params(cfg, gen):
    """GPT-2 style init, drawn in a fixed order from one seeded generator.

    Biases and LayerNorm params are deliberately NOT zero / one, so that a bug
    which ignores them (or their gradients) cannot hide behind a trivial value.
    Values are rounded to float32 (what the fixture stores and the engine
    loads) and then widened back to float64, so the float64 reference starts
    from exactly the same numbers the engine sees.
    """
    proj_std = 0.02 / math.sqrt(2 * cfg["n_layer"])
    params = {}
    for name, shape in param_shapes(cfg):
        z = torch.randn(shape, generator=gen, dtype=F64)
        if is_layernorm(name) and name.endswith(".weight"):
            t = 1.0 + 0.1 * z
        elif name.endswith("c_proj.weight"):
            t = proj_std * z  # scaled residual projections (attn and mlp)
        else:
            t = 0.02 * z  # other weights, all biases, LayerNorm biases
        params[name] = t.float().double()
    return params


# ---------------------------------------------------------------------------
# Model: written out op by op so the math is explicit.
# ---------------------------------------------------------------------------
def layer_norm(x, w, b):
    # Biased variance (divide by C), eps inside the sqrt: same as nn.LayerNorm.
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + LN_EPS) * w + b


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def linear(x, w, b):
    return F.linear(x, w, b)  # y = x W^T + b, W is [out, in]


def attention(x, p, pre, n_head):
    B, T, C = x.shape
    D = C // n_head
    qkv = linear(x, p[pre + "c_attn.weight"], p[pre + "c_attn.bias"])  # [B,T,3C]
    q, k, v = qkv.split(C, dim=-1)  # columns q | k | v, each C wide
    # Head h uses columns h*D .. h*D+D-1 of q (and of k, v).
    q = q.view(B, T, n_head, D).transpose(1, 2)  # [B,H,T,D]
    k = k.view(B, T, n_head, D).transpose(1, 2)
    v = v.view(B, T, n_head, D).transpose(1, 2)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(D)  # [B,H,T,T]
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    scores = scores.masked_fill(~causal, float("-inf"))
    y = torch.softmax(scores, dim=-1) @ v  # [B,H,T,D]
    y = y.transpose(1, 2).reshape(B, T, C)  # heads back side by side
    return linear(y, p[pre + "c_proj.weight"], p[pre + "c_proj.bias"])


def mlp(x, p, pre):
    h = gelu_tanh(linear(x, p[pre + "c_fc.weight"], p[pre + "c_fc.bias"]))
    return linear(h, p[pre + "c_proj.weight"], p[pre + "c_proj.bias"])


def forward(p, tokens, cfg):
    """Returns logits [B,T,V]."""
    B, T = tokens.shape
    x = p["wte.weight"][tokens] + p["wpe.weight"][:T]  # learned positions
    for l in range(cfg["n_layer"]):
        pre = f"h.{l}."
        x = x + attention(layer_norm(x, p[pre + "ln_1.weight"], p[pre + "ln_1.bias"]),
                          p, pre + "attn.", cfg["n_head"])
        x = x + mlp(layer_norm(x, p[pre + "ln_2.weight"], p[pre + "ln_2.bias"]),
                    p, pre + "mlp.")
    x = layer_norm(x, p["ln_f.weight"], p["ln_f.bias"])
    return x @ p["wte.weight"].t()  # tied output head, no bias


def cross_entropy(logits, targets):
    """Mean over all B*T positions of -log softmax(logits)[target]."""
    V = logits.shape[-1]
    logp = logits.reshape(-1, V) - torch.logsumexp(logits.reshape(-1, V), dim=-1, keepdim=True)
    nll = -logp.gather(1, targets.reshape(-1, 1)).squeeze(1)
    loss = nll.mean()
    # Independent check against torch's own implementation.
    ref = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))
    assert abs(loss.item() - ref.item()) <= 1e-12, (loss.item(), ref.item())
    return loss


def loss_and_grads(params, tokens, targets, cfg):
    """Mean loss and d(loss)/d(param) for every parameter, via autograd."""
    leaves = {n: t.detach().clone().requires_grad_(True) for n, t in params.items()}
    logits = forward(leaves, tokens, cfg)
    loss = cross_entropy(logits, targets)
    loss.backward()
    # wte.weight is used twice (embedding lookup and tied output head);
    # autograd sums both contributions into the one leaf's .grad.
    grads = {n: t.grad.detach().clone() for n, t in leaves.items()}
    return logits.detach(), loss.detach(), grads


# ---------------------------------------------------------------------------
# Optimizer pieces, written out by hand (checked against torch below).
# ---------------------------------------------------------------------------
def lr_at(s, tr):
    """Linear warmup over warmup_steps, then cosine decay from lr to end_lr."""
    S, W = tr["steps"], tr["warmup_steps"]
    if s < W:
        return tr["lr"] * (s + 1) / W
    progress = (s - W) / max(1, S - W)
    return tr["end_lr"] + 0.5 * (tr["lr"] - tr["end_lr"]) * (1.0 + math.cos(math.pi * progress))


def clip_grads(grads, max_norm):
    """Global L2 norm over all parameters; rescale only if it exceeds max_norm.

    Returns the pre-clip norm. Same rule as torch.nn.utils.clip_grad_norm_.
    """
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads.values()))
    if norm > max_norm:
        scale = max_norm / (norm + 1e-6)
        for g in grads.values():
            g.mul_(scale)
    return norm


def decays(name, t):
    # Weight decay on every 2-D weight (including wte and wpe); never on
    # biases or LayerNorm parameters.
    return t.dim() == 2


def adamw_step(params, grads, m, v, t, lr, tr):
    """One AdamW step in place, torch.optim.AdamW (decoupled decay) semantics."""
    b1, b2, eps = tr["beta1"], tr["beta2"], tr["eps"]
    bc1 = 1.0 - b1 ** t
    bc2 = 1.0 - b2 ** t
    for n, p in params.items():
        g = grads[n]
        if decays(n, p):
            p.sub_(lr * tr["weight_decay"] * p)  # decoupled: uses lr, not the grad
        m[n].mul_(b1).add_((1.0 - b1) * g)
        v[n].mul_(b2).add_((1.0 - b2) * g * g)
        p.sub_((lr / bc1) * m[n] / (torch.sqrt(v[n]) / math.sqrt(bc2) + eps))


# ---------------------------------------------------------------------------
# Self-checks
# ---------------------------------------------------------------------------
def finite_difference_check(params, tokens, targets, grads, cfg):
    """Spot-check a few autograd gradient entries with central differences.

    This is independent of autograd, and covers the tied wte (both uses),
    positions, q/k/v biases, LayerNorm and MLP parameters.
    """
    probes = [("wte.weight", (int(tokens[0, 0]), 0)),
              ("wte.weight", (int(targets[1, 5]), 7)),
              ("wpe.weight", (3, 5)),
              ("h.0.attn.c_attn.bias", (2,)),                      # q
              ("h.0.attn.c_attn.bias", (cfg["d_model"] + 17,)),    # k
              ("h.1.attn.c_attn.weight", (2 * cfg["d_model"] + 40, 9)),  # v
              ("h.1.ln_2.weight", (11,)),
              ("h.0.mlp.c_fc.weight", (100, 3)),
              ("h.1.mlp.c_proj.bias", (4,)),
              ("ln_f.bias", (0,))]
    h = 1e-6
    with torch.no_grad():
        for name, idx in probes:
            vals = []
            for sign in (+1, -1):
                q = {n: t.clone() for n, t in params.items()}
                q[name][idx] += sign * h
                vals.append(cross_entropy(forward(q, tokens, cfg), targets).item())
            fd = (vals[0] - vals[1]) / (2 * h)
            ag = grads[name][idx].item()
            assert abs(fd - ag) <= 1e-7 + 1e-5 * abs(ag), (name, idx, fd, ag)


def check_against_torch_adamw(torch_params, opt, grads_preclip, my_clipped, my_norm,
                              my_params, lr, tr):
    """Apply the same step with torch's clip_grad_norm_ + torch.optim.AdamW."""
    for n, p in torch_params.items():
        p.grad = grads_preclip[n].clone()
    norm = torch.nn.utils.clip_grad_norm_(list(torch_params.values()), tr["grad_clip"])
    assert abs(float(norm) - my_norm) <= 1e-12 * max(1.0, my_norm), (float(norm), my_norm)
    for n, p in torch_params.items():
        assert torch.allclose(p.grad, my_clipped[n], rtol=0, atol=1e-12), n
    for group in opt.param_groups:
        group["lr"] = lr
    opt.step()
    for n, p in torch_params.items():
        diff = (p.detach() - my_params[n]).abs().max().item()
        assert diff <= 1e-12, (n, diff)


# ---------------------------------------------------------------------------
# Minimal safetensors writer / reader (no dependency on the safetensors pkg).
# ---------------------------------------------------------------------------
_DTYPES = {np.dtype("<f4"): "F32", np.dtype("<i4"): "I32"}


def write_safetensors(path, tensors, metadata):
    """tensors: ordered dict name -> little-endian numpy array (F32 or I32)."""
    header = {"__metadata__": metadata}
    offset = 0
    for name, a in tensors.items():
        header[name] = {"dtype": _DTYPES[a.dtype], "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * (-len(hjson) % 8)  # pad so the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for a in tensors.values():
            f.write(np.ascontiguousarray(a).tobytes())


def read_safetensors(path):
    with open(path, "rb") as f:
        buf = f.read()
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = buf[8 + n:]
    out = {}
    for name, info in header.items():
        dt = {"F32": "<f4", "I32": "<i4"}[info["dtype"]]
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(data[b:e], dtype=dt).reshape(info["shape"])
    return out, meta


def f32(t):
    return t.detach().to(torch.float32).numpy().astype("<f4")


def i32(t):
    return t.detach().to(torch.int32).numpy().astype("<i4")


# ---------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output .safetensors path")
    ap.add_argument("--seed", type=int, default=SEED)
    args = ap.parse_args()

    torch.use_deterministic_algorithms(True)
    cfg, tr = CFG, TRAIN
    B, T, V, S = cfg["batch"], cfg["seq_len"], cfg["vocab_size"], tr["steps"]
    gen = torch.Generator().manual_seed(args.seed)

    # Fixed draw order: params, then the eval batch, then the training batches.
    params = init_params(cfg, gen)
    tokens = torch.randint(0, V, (B, T), generator=gen)
    targets = torch.randint(0, V, (B, T), generator=gen)
    step_tokens = torch.randint(0, V, (S, B, T), generator=gen)
    step_targets = torch.randint(0, V, (S, B, T), generator=gen)

    # --- forward/backward at the initial weights ---------------------------
    logits, loss, grads = loss_and_grads(params, tokens, targets, cfg)
    finite_difference_check(params, tokens, targets, grads, cfg)

    # --- 10 training steps: hand-written AdamW, mirrored by torch's --------
    cur = {n: t.clone() for n, t in params.items()}
    m = {n: torch.zeros_like(t) for n, t in cur.items()}
    v = {n: torch.zeros_like(t) for n, t in cur.items()}
    tp = {n: t.clone().requires_grad_(True) for n, t in params.items()}
    opt = torch.optim.AdamW(
        [{"params": [p for n, p in tp.items() if decays(n, p)], "weight_decay": tr["weight_decay"]},
         {"params": [p for n, p in tp.items() if not decays(n, p)], "weight_decay": 0.0}],
        lr=tr["lr"], betas=(tr["beta1"], tr["beta2"]), eps=tr["eps"])

    step_losses, step_lrs, step_norms = [], [], []
    for s in range(S):
        _, l, g = loss_and_grads(cur, step_tokens[s], step_targets[s], cfg)
        g_pre = {n: x.clone() for n, x in g.items()}
        norm = clip_grads(g, tr["grad_clip"])
        lr = lr_at(s, tr)
        adamw_step(cur, g, m, v, s + 1, lr, tr)
        check_against_torch_adamw(tp, opt, g_pre, g, norm, cur, lr, tr)
        step_losses.append(l.item())
        step_lrs.append(lr)
        step_norms.append(norm)

    # --- write the fixture --------------------------------------------------
    names = [n for n, _ in param_shapes(cfg)]
    tensors = {}
    for n in names:
        tensors["param." + n] = f32(params[n])
    tensors["tokens"] = i32(tokens)
    tensors["targets"] = i32(targets)
    tensors["logits"] = f32(logits)
    tensors["loss"] = f32(loss.reshape(1))
    for n in names:
        tensors["grad." + n] = f32(grads[n])
    tensors["step_tokens"] = i32(step_tokens)
    tensors["step_targets"] = i32(step_targets)
    tensors["step_losses"] = f32(torch.tensor(step_losses, dtype=F64))
    tensors["step_lrs"] = f32(torch.tensor(step_lrs, dtype=F64))
    tensors["step_grad_norms"] = f32(torch.tensor(step_norms, dtype=F64))
    for n in names:
        tensors["final." + n] = f32(cur[n])

    metadata = {k: repr(val) if isinstance(val, float) else str(val)
                for k, val in {**cfg, **tr}.items()}
    metadata["seed"] = str(args.seed)
    metadata["generator"] = f"tools/reference/gpt2_reference.py (torch {torch.__version__}, float64)"

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    write_safetensors(args.out, tensors, metadata)

    # Read back and verify the file round-trips bit-exactly.
    back, meta = read_safetensors(args.out)
    assert meta == metadata and list(back) == list(tensors)
    for n, a in tensors.items():
        assert back[n].dtype == a.dtype and np.array_equal(back[n], a), n

    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes, {len(tensors)} tensors)")
    print(f"initial loss      {loss.item():.10f}  (ln V = {math.log(V):.10f})")
    print(f"initial grad norm {math.sqrt(sum(float((x * x).sum()) for x in grads.values())):.10f}")
    for s in range(S):
        clipped = "clipped" if step_norms[s] > tr["grad_clip"] else ""
        print(f"step {s}: loss {step_losses[s]:.10f}  lr {step_lrs[s]:.6e}  "
              f"grad_norm {step_norms[s]:.6f} {clipped}")
    print("checks passed: F.cross_entropy, finite differences, torch clip_grad_norm_ + AdamW (1e-12)")


if __name__ == "__main__":
    main()
