#!/usr/bin/env python3
"""Independent float64 reference for meshlm's composable transformer (fixture generator).

One fixture per architecture case (GPT-J-style parallel blocks, Llama-style GQA + RMSNorm +
SwiGLU, multi-query attention with q/k/v biases, ALiBi, every MLP type, RMSNorm with a bias,
z-loss, no positions). Each holds random parameters in meshlm's names and layouts, a batch,
the logits, the loss (cross-entropy + z-loss), the plain cross-entropy and the gradient of the
loss with respect to every parameter. The C++ tests check the engine against them.

Nothing here comes from meshlm: the model is written out op by op in plain torch, all
arithmetic is float64 (the "truth", differentiated with autograd), and only the results are
rounded to float32 for storage. Before writing, every case is checked against a second forward
pass built from torch's library ops (F.layer_norm / F.rms_norm, scaled_dot_product_attention,
complex-number RoPE, F.cross_entropy), against central finite differences, and -- where
`transformers` is importable -- the gptj_style, llama_gqa and mqa_qkv_bias cases against
transformers' GPTJForCausalLM, LlamaForCausalLM and Qwen2ForCausalLM holding the same weights.

Run from the repository root with the reference venv (tools/reference/setup_venv.sh):

    .venv/bin/python tools/reference/transformer_reference.py --out-dir tests/fixtures/transformer

(`--case NAME` regenerates one case only.) See tools/reference/README.md for the contents.
"""

import argparse
import json
import math
import os
import struct

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.numpy import load_file

F64 = torch.float64
SEED = 4321

# ---------------------------------------------------------------------------
# Configurations. BASE is a GPT-2-like model; every case overrides some keys.
# All keys (plus batch and seq_len) go into the fixture's __metadata__. BASE's MLP is 2C wide
# (d_ff 64) to keep the files small; gptj_style and zloss use d_ff 0 (= 4C).
# ---------------------------------------------------------------------------
BASE = dict(n_layer=2, d_model=32, n_head=4, n_kv_head=4, vocab_size=61, max_seq_len=16,
            block="sequential", norm="layernorm", norm_bias=True, norm_eps=1e-5,
            position="learned", rope_dim=0, rope_style="half", rope_base=10000.0,
            qkv_bias=True, proj_bias=True, mlp_bias=True, mlp="gelu_tanh", d_ff=64,
            tied_head=True, head_bias=False, z_loss=0.0, qk_norm=False, attn_act="softmax",
            logit_scale=1.0, t5_buckets=32, t5_max_distance=128)
CONFIG_KEYS = list(BASE)

CASES = {
    # GPT-J: parallel block with one LayerNorm, interleaved RoPE on the first quarter of each
    # head, no attention biases, MLP biases, untied head with a bias, z-loss.
    "gptj_style": dict(n_head=2, n_kv_head=2, d_ff=0, block="parallel", position="rope",
                       rope_dim=4, rope_style="interleaved", qkv_bias=False, proj_bias=False,
                       mlp_bias=True, mlp="gelu_tanh", tied_head=False, head_bias=True,
                       z_loss=1e-4, seq_len=14),
    # Llama: RMSNorm without bias, full-width half-split RoPE, 4 query heads on 2 kv heads,
    # no biases anywhere, SwiGLU with d_ff != 4C, untied head without bias.
    "llama_gqa": dict(n_head=4, n_kv_head=2, norm="rmsnorm", norm_bias=False, norm_eps=1e-6,
                      position="rope", rope_style="half", rope_base=500000.0, qkv_bias=False,
                      proj_bias=False, mlp_bias=False, mlp="swiglu", d_ff=40, tied_head=False,
                      head_bias=False, seq_len=16),
    # Qwen2-like, multi-query: one kv head, biases on q/k/v only, tied head.
    "mqa_qkv_bias": dict(n_head=4, n_kv_head=1, norm="rmsnorm", norm_bias=False, norm_eps=1e-6,
                         position="rope", rope_style="half", qkv_bias=True, proj_bias=False,
                         mlp_bias=False, mlp="swiglu", d_ff=48, seq_len=13),
    # ALiBi with 6 heads (not a power of two: exercises the interleaved slope rule).
    "alibi": dict(d_model=36, n_head=6, n_kv_head=6, position="alibi", seq_len=15),
    # T5's bucketed bias (seed 003, causal): 8 buckets, 4 exact distances, log buckets up to 12,
    # the last bucket from there on; 4 query heads on 2 kv heads, an untied head.
    "t5_bias": dict(n_head=4, n_kv_head=2, position="t5_bias", t5_buckets=8,
                    t5_max_distance=12, tied_head=False, seq_len=16),
    # Transformer-VQ's e_scale on the logits of a tied head, with z-loss on the scaled logits.
    "logit_scale": dict(logit_scale=0.25, z_loss=1e-3, seq_len=12),
    # The remaining MLP types on the learned-position sequential base.
    "mlp_gelu": dict(mlp="gelu", seq_len=12),
    "mlp_relu": dict(mlp="relu", seq_len=12),
    "mlp_sqrelu": dict(mlp="sqrelu", seq_len=12),
    "mlp_geglu": dict(mlp="geglu", d_ff=24, seq_len=12),
    "rmsnorm_bias": dict(norm="rmsnorm", norm_bias=True, seq_len=12),
    "zloss": dict(z_loss=1e-3, d_ff=0, seq_len=16),
    "nopos": dict(position="none", seq_len=12),
    # Seed 002's qk_norm: RMSNorm without gains over each query and key head, before RoPE (meshlm
    # normalizes after rotating: the two commute), on a Llama-style GQA model.
    "qk_norm": dict(n_head=4, n_kv_head=2, norm="rmsnorm", norm_bias=False, position="rope",
                    rope_style="half", qkv_bias=False, proj_bias=False, mlp_bias=False,
                    mlp="swiglu", d_ff=40, tied_head=False, qk_norm=True, seq_len=14),
    # Seed 002's attention nonlinearities: relu(s)^2 / max_seq_len on the learned-position base,
    # and (elu(s) + 1) normalized by norm_eps + the row sum with ALiBi and grouped kv heads.
    "attn_sqrelu": dict(attn_act="sqrelu", seq_len=12),
    "attn_norm_elu": dict(d_model=36, n_head=6, n_kv_head=2, position="alibi",
                          attn_act="norm_elu", seq_len=15),
}
BATCH = 2
DEFAULT_SEQ_LEN = 12


def case_config(name):
    over = dict(CASES[name])
    seq_len = over.pop("seq_len", DEFAULT_SEQ_LEN)
    cfg = {**BASE, **over}
    assert set(cfg) == set(BASE), name
    return cfg, seq_len


def dims(cfg):
    C, H, K = cfg["d_model"], cfg["n_head"], cfg["n_kv_head"]
    D = C // H
    assert C % H == 0 and H % K == 0
    F_ = cfg["d_ff"] or 4 * C
    gated = cfg["mlp"] in ("swiglu", "geglu")
    R = cfg["rope_dim"] or D
    if cfg["position"] == "rope":
        assert R % 2 == 0 and R <= D
    return C, H, K, D, F_, gated, R


# ---------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------
def param_shapes(cfg):
    """Ordered (name, shape); weights are [out, in] like nn.Linear."""
    C, H, K, D, F_, gated, _ = dims(cfg)
    V, P = cfg["vocab_size"], cfg["max_seq_len"]
    out = [("wte.weight", (V, C))]
    if cfg["position"] == "learned":
        out.append(("wpe.weight", (P, C)))
    if cfg["position"] == "t5_bias":
        out.append(("t5.rel_bias", (H, cfg["t5_buckets"])))

    def norm(pre):
        out.append((pre + ".weight", (C,)))
        if cfg["norm_bias"]:
            out.append((pre + ".bias", (C,)))

    for l in range(cfg["n_layer"]):
        p = f"h.{l}."
        norm(p + "ln_1")
        out.append((p + "attn.c_attn.weight", ((H + 2 * K) * D, C)))
        if cfg["qkv_bias"]:
            out.append((p + "attn.c_attn.bias", ((H + 2 * K) * D,)))
        out.append((p + "attn.c_proj.weight", (C, H * D)))
        if cfg["proj_bias"]:
            out.append((p + "attn.c_proj.bias", (C,)))
        if cfg["block"] == "sequential":
            norm(p + "ln_2")
        out.append((p + "mlp.c_fc.weight", ((2 if gated else 1) * F_, C)))
        if cfg["mlp_bias"]:
            out.append((p + "mlp.c_fc.bias", ((2 if gated else 1) * F_,)))
        out.append((p + "mlp.c_proj.weight", (C, F_)))
        if cfg["mlp_bias"]:
            out.append((p + "mlp.c_proj.bias", (C,)))
    norm("ln_f")
    if not cfg["tied_head"]:
        out.append(("lm_head.weight", (V, C)))
    if cfg["head_bias"]:
        out.append(("lm_head.bias", (V,)))
    return out


def is_norm(name):
    return name.startswith("ln_f") or ".ln_" in name


def init_params(cfg, gen):
    """Random, non-trivial parameters drawn in param_shapes order from one generator.

    Scales are larger than a training init so logits are O(1) and attention is peaked: a
    misplaced head, rotation or bias shows far above float32 round-off. Norm gains are
    1 + N(0, 0.2) and every bias N(0, 0.1), never a trivial 1 or 0. Values are rounded to
    float32 (what the fixture stores) and widened back, so the float64 reference starts
    from exactly the numbers the engine loads.
    """
    params = {}
    for name, shape in param_shapes(cfg):
        z = torch.randn(shape, generator=gen, dtype=F64)
        if is_norm(name) and name.endswith(".weight"):
            t = 1.0 + 0.2 * z
        elif name.endswith(".bias"):
            t = 0.1 * z
        elif name in ("wte.weight", "wpe.weight"):
            t = 0.3 * z
        elif name == "t5.rel_bias":
            t = 0.5 * z  # large enough to move the attention visibly
        elif name.endswith("c_proj.weight"):
            t = 0.1 * z
        else:
            t = 0.15 * z
        params[name] = t.float().double()
    return params


# ---------------------------------------------------------------------------
# The model, written out op by op.
# ---------------------------------------------------------------------------
def norm(cfg, x, p, pre):
    w, b = p[pre + ".weight"], p.get(pre + ".bias")
    eps = cfg["norm_eps"]
    if cfg["norm"] == "layernorm":
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # biased variance
        y = (x - mean) / torch.sqrt(var + eps) * w
    else:  # rmsnorm
        y = x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps) * w
    return y + b if b is not None else y


def linear(x, p, pre):
    y = x @ p[pre + ".weight"].t()
    b = p.get(pre + ".bias")
    return y + b if b is not None else y


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def gelu_erf(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def silu(x):
    return x / (1.0 + torch.exp(-x))


def rope_inv_freq(cfg):
    if "inv_freq" in cfg:  # not a meshlm key: hf_families_reference.py's llama3 frequencies
        return cfg["inv_freq"]
    _, _, _, _, _, _, R = dims(cfg)
    i = torch.arange(R // 2, dtype=F64)
    return cfg["rope_base"] ** (-2.0 * i / R)


def rope(cfg, x):
    """x [B, heads, T, D]: rotate the first rope_dim dims of every head, pair i by t * inv_freq_i."""
    T, R = x.shape[2], dims(cfg)[6]
    ang = torch.arange(T, dtype=F64)[:, None] * rope_inv_freq(cfg)[None, :]  # [T, R/2]
    cos, sin = torch.cos(ang), torch.sin(ang)
    rot, rest = x[..., :R], x[..., R:]
    if cfg["rope_style"] == "interleaved":  # pairs (2i, 2i+1), GPT-J
        a, b = rot[..., 0::2], rot[..., 1::2]
        rot = torch.stack((a * cos - b * sin, b * cos + a * sin), dim=-1).flatten(-2)
    else:  # "half": pairs (i, i + R/2), NeoX / Llama
        a, b = rot[..., :R // 2], rot[..., R // 2:]
        rot = torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)
    return torch.cat((rot, rest), dim=-1)


def alibi_slopes(n):
    """ALiBi head slopes for any head count (Press et al.'s reference rule)."""
    def pow2(m):
        r = 2.0 ** (-8.0 / m)
        return [r ** (i + 1) for i in range(m)]
    if n & (n - 1) == 0:
        return pow2(n)
    p = 1 << (n.bit_length() - 1)  # closest lower power of two
    return pow2(p) + pow2(2 * p)[0::2][:n - p]


def t5_bucket(d, num_buckets, max_distance):
    """Seed 003's causal bucket of distance d = i - j >= 0 (float32's eps as the seed)."""
    exact = num_buckets // 2
    if d < exact:
        return d
    eps = float(np.finfo(np.float32).eps)
    large = exact + int(math.log(d / exact + eps) / math.log(max_distance / exact)
                        * (num_buckets - exact))
    return min(large, num_buckets - 1)


def t5_bias(cfg, p, T):
    """[H, T, T]: the table entry of head h for the bucket of i - j (0 above the diagonal)."""
    nb, md = cfg["t5_buckets"], cfg["t5_max_distance"]
    idx = torch.tensor([[t5_bucket(max(i - j, 0), nb, md) for j in range(T)] for i in range(T)])
    return p["t5.rel_bias"][:, idx]


def attention(cfg, x, p, pre):
    B, T, _ = x.shape
    C, H, K, D, _, _, _ = dims(cfg)
    qkv = linear(x, p, pre + "c_attn")  # [B, T, (H + 2K) D]: H q heads | K k heads | K v heads
    q = qkv[..., :H * D].reshape(B, T, H, D).transpose(1, 2)  # [B, H, T, D]
    k = qkv[..., H * D:(H + K) * D].reshape(B, T, K, D).transpose(1, 2)  # [B, K, T, D]
    v = qkv[..., (H + K) * D:].reshape(B, T, K, D).transpose(1, 2)
    if cfg["qk_norm"]:
        def rms(t):
            return t / torch.sqrt((t * t).mean(-1, keepdim=True) + cfg["norm_eps"])
        q, k = rms(q), rms(k)
    if cfg["position"] == "rope":
        q, k = rope(cfg, q), rope(cfg, k)
    group = H // K
    kv_of = torch.arange(H) // group  # query head h reads kv head h // (H / K)
    k, v = k[:, kv_of], v[:, kv_of]
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # [B, H, T, T]
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    if cfg["position"] == "alibi":
        slopes = torch.tensor(alibi_slopes(H), dtype=F64)
        scores = scores - slopes[:, None, None] * (i - j).to(F64)
    if cfg["position"] == "t5_bias":
        scores = scores + t5_bias(cfg, p, T)
    act = cfg["attn_act"]
    if act == "softmax":
        probs = torch.softmax(scores.masked_fill(j > i, float("-inf")), dim=-1)
    else:  # seed 002: a = act(s) on j <= i; / max_seq_len, or / (eps + row sum) for norm_*
        a = torch.relu(scores) ** 2 if act.endswith("sqrelu") else torch.nn.functional.elu(scores) + 1
        a = a.masked_fill(j > i, 0.0)
        if act.startswith("norm_"):
            probs = a / (cfg["norm_eps"] + a.sum(-1, keepdim=True))
        else:
            probs = a / cfg["max_seq_len"]
    y = probs @ v  # [B, H, T, D]
    y = y.transpose(1, 2).reshape(B, T, H * D)
    return linear(y, p, pre + "c_proj")


def mlp(cfg, x, p, pre):
    h = linear(x, p, pre + "c_fc")
    kind = cfg["mlp"]
    if kind in ("swiglu", "geglu"):
        F_ = dims(cfg)[4]
        gate, up = h[..., :F_], h[..., F_:]
        h = (silu(gate) if kind == "swiglu" else gelu_erf(gate)) * up
    elif kind == "gelu_tanh":
        h = gelu_tanh(h)
    elif kind == "gelu":
        h = gelu_erf(h)
    elif kind == "relu":
        h = torch.clamp(h, min=0.0)
    elif kind == "sqrelu":
        h = torch.clamp(h, min=0.0) ** 2
    else:
        raise ValueError(kind)
    return linear(h, p, pre + "c_proj")


def forward(cfg, p, tokens):
    """logits [B, T, V]."""
    T = tokens.shape[1]
    x = p["wte.weight"][tokens]
    if cfg["position"] == "learned":
        x = x + p["wpe.weight"][:T]
    for l in range(cfg["n_layer"]):
        pre = f"h.{l}."
        if cfg["block"] == "sequential":
            x = x + attention(cfg, norm(cfg, x, p, pre + "ln_1"), p, pre + "attn.")
            x = x + mlp(cfg, norm(cfg, x, p, pre + "ln_2"), p, pre + "mlp.")
        else:  # parallel (GPT-J): one norm feeds both branches
            h = norm(cfg, x, p, pre + "ln_1")
            x = x + attention(cfg, h, p, pre + "attn.") + mlp(cfg, h, p, pre + "mlp.")
    x = norm(cfg, x, p, "ln_f")
    logits = x @ p["wte.weight" if cfg["tied_head"] else "lm_head.weight"].t()
    if cfg["head_bias"]:
        logits = logits + p["lm_head.bias"]
    return cfg["logit_scale"] * logits


def objective(cfg, logits, targets):
    """(loss, ce): ce = mean over targets >= 0 of -log softmax[target];
    loss = ce + z_loss * mean over the same rows of logsumexp(logits)^2."""
    V = logits.shape[-1]
    flat, tgt = logits.reshape(-1, V), targets.reshape(-1)
    keep = tgt >= 0
    lse = torch.logsumexp(flat[keep], dim=-1)
    nll = lse - flat[keep].gather(1, tgt[keep][:, None]).squeeze(1)
    ce = nll.mean()
    return ce + cfg["z_loss"] * (lse ** 2).mean(), ce


def loss_and_grads(cfg, params, tokens, targets):
    leaves = {n: t.clone().requires_grad_(True) for n, t in params.items()}
    logits = forward(cfg, leaves, tokens)
    loss, ce = objective(cfg, logits, targets)
    loss.backward()  # a tied wte sums its embedding and output-head gradients
    return logits.detach(), loss.detach(), ce.detach(), {n: t.grad for n, t in leaves.items()}


# ---------------------------------------------------------------------------
# Self-checks
# ---------------------------------------------------------------------------
def library_forward(cfg, p, tokens):
    """The same model from torch's library ops, as a check on the op-by-op forward."""
    B, T = tokens.shape
    C, H, K, D, F_, _, R = dims(cfg)
    x = F.embedding(tokens, p["wte.weight"])
    if cfg["position"] == "learned":
        x = x + F.embedding(torch.arange(T), p["wpe.weight"])

    def nrm(pre, y):
        w, b = p[pre + ".weight"], p.get(pre + ".bias")
        if cfg["norm"] == "layernorm":
            return F.layer_norm(y, (C,), w, b, cfg["norm_eps"])
        y = F.rms_norm(y, (C,), w, cfg["norm_eps"])
        return y + b if b is not None else y

    def rot(t):  # complex multiplication by e^{i t theta}
        ang = torch.outer(torch.arange(T, dtype=F64), rope_inv_freq(cfg))
        e = torch.polar(torch.ones_like(ang), ang)
        r, rest = t[..., :R], t[..., R:]
        if cfg["rope_style"] == "interleaved":
            z = torch.view_as_complex(r.reshape(*r.shape[:-1], R // 2, 2).contiguous()) * e
            r = torch.view_as_real(z).flatten(-2)
        else:
            z = torch.complex(r[..., :R // 2], r[..., R // 2:]) * e
            r = torch.cat((z.real, z.imag), dim=-1)
        return torch.cat((r, rest), dim=-1)

    def attn(pre, y):
        qkv = F.linear(y, p[pre + "c_attn.weight"], p.get(pre + "c_attn.bias"))
        q, k, v = qkv.split([H * D, K * D, K * D], dim=-1)
        q = q.view(B, T, H, D).transpose(1, 2)
        k = k.view(B, T, K, D).transpose(1, 2)
        v = v.view(B, T, K, D).transpose(1, 2)
        if cfg["qk_norm"]:
            q = F.rms_norm(q, (D,), None, cfg["norm_eps"])
            k = F.rms_norm(k, (D,), None, cfg["norm_eps"])
        if cfg["position"] == "rope":
            q, k = rot(q), rot(k)
        k = k.repeat_interleave(H // K, dim=1)
        v = v.repeat_interleave(H // K, dim=1)
        mask = torch.full((T, T), float("-inf"), dtype=F64).triu(1)
        if cfg["position"] == "alibi":
            # build_alibi-style: slope * j per row; differs from -slope * (i - j) by a
            # per-row constant, which softmax ignores.
            sl = torch.tensor(alibi_slopes(H), dtype=F64)
            mask = mask + sl[:, None, None] * torch.arange(T, dtype=F64)[None, None, :]
        if cfg["position"] == "t5_bias":  # an embedding lookup of the bucket ids, as HF T5
            nb, md = cfg["t5_buckets"], cfg["t5_max_distance"]
            ids = torch.tensor([[t5_bucket(max(i - j, 0), nb, md) for j in range(T)]
                                for i in range(T)])
            mask = mask + F.embedding(ids, p["t5.rel_bias"].t()).permute(2, 0, 1)
        if cfg["attn_act"] == "softmax":
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        else:  # the same nonlinearity from library ops: einsum scores, F.relu / F.elu, tril
            s = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(D)
            if cfg["position"] == "alibi":  # -slope (i - j): the bias before the nonlinearity
                pos = torch.arange(T, dtype=F64)
                s = s + sl[:, None, None] * (pos[None, :] - pos[:, None])
            a = F.relu(s).square() if cfg["attn_act"].endswith("sqrelu") else F.elu(s) + 1
            a = torch.tril(a)
            if cfg["attn_act"].startswith("norm_"):
                a = a / (a.sum(-1, keepdim=True) + cfg["norm_eps"])
            else:
                a = a / cfg["max_seq_len"]
            o = a @ v
        return F.linear(o.transpose(1, 2).reshape(B, T, H * D), p[pre + "c_proj.weight"],
                        p.get(pre + "c_proj.bias"))

    def ffn(pre, y):
        h = F.linear(y, p[pre + "c_fc.weight"], p.get(pre + "c_fc.bias"))
        act = {"gelu_tanh": lambda t: F.gelu(t, approximate="tanh"), "gelu": F.gelu,
               "relu": F.relu, "sqrelu": lambda t: F.relu(t).square()}
        if cfg["mlp"] == "swiglu":
            h = F.silu(h[..., :F_]) * h[..., F_:]
        elif cfg["mlp"] == "geglu":
            h = F.gelu(h[..., :F_]) * h[..., F_:]
        else:
            h = act[cfg["mlp"]](h)
        return F.linear(h, p[pre + "c_proj.weight"], p.get(pre + "c_proj.bias"))

    for l in range(cfg["n_layer"]):
        pre = f"h.{l}."
        if cfg["block"] == "sequential":
            x = x + attn(pre + "attn.", nrm(pre + "ln_1", x))
            x = x + ffn(pre + "mlp.", nrm(pre + "ln_2", x))
        else:
            h = nrm(pre + "ln_1", x)
            x = x + attn(pre + "attn.", h) + ffn(pre + "mlp.", h)
    head = p["wte.weight" if cfg["tied_head"] else "lm_head.weight"]
    return F.linear(nrm("ln_f", x), head, p.get("lm_head.bias")) * cfg["logit_scale"]


def check_library(cfg, params, tokens, targets, logits, loss, ce):
    ref = library_forward(cfg, params, tokens)
    err = (ref - logits).abs().max().item()
    assert err <= 1e-12, ("library forward", err)
    V = logits.shape[-1]
    ce_ref = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1).long(), ignore_index=-1)
    assert abs(ce_ref.item() - ce.item()) <= 1e-13, (ce_ref.item(), ce.item())
    keep = targets.reshape(-1) >= 0
    z = torch.logsumexp(logits.reshape(-1, V)[keep], -1).square().mean()
    assert abs(ce.item() + cfg["z_loss"] * z.item() - loss.item()) <= 1e-13
    return err


def finite_difference_check(cfg, params, tokens, targets, grads, gen):
    """Central differences on one random entry of every parameter tensor."""
    h, worst = 1e-6, 0.0
    with torch.no_grad():
        for name, t in params.items():
            idx = tuple(int(torch.randint(0, s, (1,), generator=gen)) for s in t.shape)
            vals = []
            for sign in (1, -1):
                q = dict(params)
                q[name] = t.clone()
                q[name][idx] += sign * h
                vals.append(objective(cfg, forward(cfg, q, tokens), targets)[0].item())
            fd = (vals[0] - vals[1]) / (2 * h)
            ag = grads[name][idx].item()
            assert abs(fd - ag) <= 1e-8 + 1e-6 * abs(ag), (name, idx, fd, ag)
            worst = max(worst, abs(fd - ag))
    return worst


def hf_check(name, cfg, params, tokens, logits):
    """Load the same weights into the matching transformers model; compare the logits.

    transformers computes some pieces in float32 even in a float64 model (RMSNorm,
    GPT-J's attention scores, the rotary tables), hence the loose tolerance.
    """
    try:
        import transformers
    except ImportError:
        return None
    C, H, K, D, F_, _, R = dims(cfg)
    L, V = cfg["n_layer"], cfg["vocab_size"]
    sd = {}
    if name == "gptj_style":
        hf = transformers.GPTJConfig(vocab_size=V, n_positions=cfg["max_seq_len"], n_embd=C,
                                     n_layer=L, n_head=H, rotary_dim=R, n_inner=F_,
                                     activation_function="gelu_new",
                                     layer_norm_epsilon=cfg["norm_eps"],
                                     tie_word_embeddings=False,
                                     bos_token_id=None, eos_token_id=None)
        model_cls, pre = transformers.GPTJForCausalLM, "transformer."
        sd[pre + "wte.weight"] = params["wte.weight"]
        for l in range(L):
            a, b = f"h.{l}.", f"{pre}h.{l}."
            w = params[a + "attn.c_attn.weight"]
            sd[b + "attn.q_proj.weight"], sd[b + "attn.k_proj.weight"], \
                sd[b + "attn.v_proj.weight"] = w.split(C)
            sd[b + "attn.out_proj.weight"] = params[a + "attn.c_proj.weight"]
            sd[b + "ln_1.weight"], sd[b + "ln_1.bias"] = params[a + "ln_1.weight"], \
                params[a + "ln_1.bias"]
            for m, hm in (("c_fc", "fc_in"), ("c_proj", "fc_out")):
                sd[b + f"mlp.{hm}.weight"] = params[a + f"mlp.{m}.weight"]
                sd[b + f"mlp.{hm}.bias"] = params[a + f"mlp.{m}.bias"]
        sd[pre + "ln_f.weight"], sd[pre + "ln_f.bias"] = params["ln_f.weight"], \
            params["ln_f.bias"]
        sd["lm_head.weight"], sd["lm_head.bias"] = params["lm_head.weight"], \
            params["lm_head.bias"]
    elif name in ("llama_gqa", "mqa_qkv_bias"):
        kw = dict(vocab_size=V, hidden_size=C, intermediate_size=F_, num_hidden_layers=L,
                  num_attention_heads=H, num_key_value_heads=K, rms_norm_eps=cfg["norm_eps"],
                  max_position_embeddings=cfg["max_seq_len"], hidden_act="silu",
                  tie_word_embeddings=cfg["tied_head"], bos_token_id=None,
                  eos_token_id=None, pad_token_id=None)
        rope_p = {"rope_type": "default", "rope_theta": cfg["rope_base"]}
        if name == "llama_gqa":
            hf = transformers.LlamaConfig(**kw, rope_parameters=rope_p)
            model_cls = transformers.LlamaForCausalLM
        else:
            hf = transformers.Qwen2Config(**kw, rope_parameters=rope_p, use_sliding_window=False)
            model_cls = transformers.Qwen2ForCausalLM
        pre = "model."
        sd[pre + "embed_tokens.weight"] = params["wte.weight"]
        for l in range(L):
            a, b = f"h.{l}.", f"{pre}layers.{l}."
            for suf in (["weight", "bias"] if cfg["qkv_bias"] else ["weight"]):
                q, k, v = params[a + "attn.c_attn." + suf].split([H * D, K * D, K * D])
                sd[b + "self_attn.q_proj." + suf], sd[b + "self_attn.k_proj." + suf], \
                    sd[b + "self_attn.v_proj." + suf] = q, k, v
            sd[b + "self_attn.o_proj.weight"] = params[a + "attn.c_proj.weight"]
            sd[b + "input_layernorm.weight"] = params[a + "ln_1.weight"]
            sd[b + "post_attention_layernorm.weight"] = params[a + "ln_2.weight"]
            gate, up = params[a + "mlp.c_fc.weight"].split(F_)
            sd[b + "mlp.gate_proj.weight"], sd[b + "mlp.up_proj.weight"] = gate, up
            sd[b + "mlp.down_proj.weight"] = params[a + "mlp.c_proj.weight"]
        sd[pre + "norm.weight"] = params["ln_f.weight"]
        sd["lm_head.weight"] = params["wte.weight" if cfg["tied_head"] else "lm_head.weight"]
    elif name == "alibi":
        # BLOOM's build_alibi_tensor holds slope_h * j; compare the slopes themselves.
        from transformers.models.bloom.modeling_bloom import build_alibi_tensor
        bloom = build_alibi_tensor(torch.ones(1, 2), H, F64)[:, 0, 1]
        err = (bloom - torch.tensor(alibi_slopes(H), dtype=F64)).abs().max().item()
        assert err <= 1e-15, ("alibi slopes", err)
        return err
    elif name == "t5_bias":
        # transformers' T5 buckets (decoder side, bidirectional=False) on distances 0..4095.
        from transformers.models.t5.modeling_t5 import T5Attention
        rel = -torch.arange(4096)[None, :]  # memory - query position
        for nb, md in ((cfg["t5_buckets"], cfg["t5_max_distance"]), (32, 128)):
            theirs = T5Attention._relative_position_bucket(rel, False, nb, md)[0].tolist()
            mine = [t5_bucket(d, nb, md) for d in range(4096)]
            assert mine == theirs, ("t5 buckets", nb, md)
        return 0.0
    else:
        return None
    hf._attn_implementation = "eager"
    model = model_cls(hf).to(F64).eval()
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [m for m in missing if not m.endswith("lm_head.weight") or not cfg["tied_head"]]
    assert not missing and not unexpected, (missing, unexpected)
    with torch.no_grad():
        ref = model(input_ids=tokens.long()).logits
    err = (ref - logits).abs().max().item()
    assert err <= 2e-5, (name, "transformers", err)
    return err


# ---------------------------------------------------------------------------
def save_safetensors(path, tensors, metadata):
    """Byte-deterministic safetensors writer (the safetensors package orders the metadata
    differently from run to run): header keys in insertion order, data 8-byte aligned."""
    dtypes = {np.dtype("<f4"): "F32", np.dtype("<i4"): "I32"}
    header, offset = {"__metadata__": metadata}, 0
    for name, a in tensors.items():
        header[name] = {"dtype": dtypes[a.dtype], "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for a in tensors.values():
            f.write(np.ascontiguousarray(a).tobytes())


def bool_str(v):
    return ("true" if v else "false") if isinstance(v, bool) else \
        (repr(v) if isinstance(v, float) else str(v))


def make_case(name, out_dir, seed):
    cfg, T = case_config(name)
    B, V = BATCH, cfg["vocab_size"]
    # One generator per case (seed + case index): regenerating one case changes no other.
    gen = torch.Generator().manual_seed(seed + list(CASES).index(name))
    params = init_params(cfg, gen)
    tokens = torch.randint(0, V, (B, T), generator=gen)
    targets = torch.randint(0, V, (B, T), generator=gen)
    # A few ignored targets (-1), in both rows, never a whole row.
    for b, t in ((0, 1), (0, T - 1), (1, T // 2)):
        targets[b, t] = -1

    logits, loss, ce, grads = loss_and_grads(cfg, params, tokens, targets)
    lib_err = check_library(cfg, params, tokens, targets, logits, loss, ce)
    fd_err = finite_difference_check(cfg, params, tokens, targets, grads, gen)
    hf_err = hf_check(name, cfg, params, tokens, logits)

    def f32(t):
        return t.detach().to(torch.float32).numpy().astype("<f4")

    tensors = {}
    names = [n for n, _ in param_shapes(cfg)]
    for n in names:
        tensors["param." + n] = f32(params[n])
    for n in names:
        tensors["grad." + n] = f32(grads[n])
    tensors["tokens"] = tokens.numpy().astype("<i4")
    tensors["targets"] = targets.numpy().astype("<i4")
    tensors["logits"] = f32(logits)
    tensors["loss"] = f32(loss.reshape(1))
    tensors["ce"] = f32(ce.reshape(1))
    metadata = {k: bool_str(cfg[k]) for k in CONFIG_KEYS}
    metadata.update(batch=str(B), seq_len=str(T), case=name, seed=str(seed),
                    generator=f"tools/reference/transformer_reference.py "
                              f"(torch {torch.__version__}, float64)")
    path = os.path.join(out_dir, name + ".safetensors")
    save_safetensors(path, tensors, metadata)
    back = load_file(path)
    assert set(back) == set(tensors)
    assert all(back[k].dtype == v.dtype and np.array_equal(back[k], v) for k, v in tensors.items())

    n_params = sum(t.numel() for t in params.values())
    hf_txt = "" if hf_err is None else f", transformers {hf_err:.1e}"
    print(f"{name:13s} {os.path.getsize(path):6d} B  {n_params:6d} params  loss {loss.item():.6f} "
          f"ce {ce.item():.6f}  max|logit| {logits.abs().max().item():.2f}  "
          f"checks: library {lib_err:.1e}, finite-diff {fd_err:.1e}{hf_txt}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", default="tests/fixtures/transformer")
    ap.add_argument("--case", action="append", choices=list(CASES),
                    help="case(s) to write (default: all)")
    ap.add_argument("--seed", type=int, default=SEED)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    os.makedirs(args.out_dir, exist_ok=True)
    for name in args.case or CASES:
        make_case(name, args.out_dir, args.seed)


if __name__ == "__main__":
    main()
