#!/usr/bin/env python3
"""Plain PyTorch Llama training-step benchmark: the peer meshlm is compared against.

SmolLM-135M's shape by default (configs/smollm-135m.yaml: 30 layers, width 576, 9 heads with 3
key/value heads, SwiGLU of width 1536, RMSNorm eps 1e-5 without bias, rotary positions
half-style base 10000, tied head, vocabulary 49152, no biases; 134.5M parameters), written from
scratch (no transformers), fp32, AdamW (betas 0.9/0.95, weight decay 0.1 on the matrices and the
embedding; PyTorch's fused CPU AdamW, its fastest here, unless --fused-adamw 0), gradient
clipping at norm 1 (as meshlm's default optim.grad_clip), trained on uniformly random tokens. Attention is
F.scaled_dot_product_attention(is_causal=True, enable_gqa=True). Runs --warmup untimed steps,
then --steps timed ones, and prints one JSON line (the format of pytorch_gpt2_train.py):

  {"impl": "pytorch", "torch": ..., "tokens_per_s": ..., "step_s_median": ...,
   "peak_rss_mib": ..., ...}

Needs torch >= 2.5 (enable_gqa): the venv's PyPI torch, .venv/bin/python.

Environment settings (applied by re-executing the script before torch loads; 'env' leaves the
environment alone). Measured for this peer on the 2-core dev VM, see bench/README.md:

  --omp-wait-policy unset (default): libgomp's default. The PyPI wheel runs its ops and its
    GEMMs (MKL, GNU-threaded) on one OpenMP pool, so there is no second pool to yield to, and
    PASSIVE only adds wake-up latency.
  --malloc keep (default): GLIBC_TUNABLES with mmap_max=0 and a huge trim_threshold, so freed
    tensors stay in the heap instead of being munmap()ed and page-faulted back in every step.
  --mkl-amd avx2 (default; only acts on AMD CPUs): LD_PRELOAD a one-line library whose
    mkl_serv_intel_cpu_true() returns 1, so MKL runs its AVX2 SGEMM kernels rather than its
    generic path for non-Intel CPUs: +13 % tokens/s on the AMD EPYC dev VM.
  --compile: torch.compile the model (inductor, C++ CPU kernels); the first (warmup) step
    compiles. Off by default: see bench/README.md for what it gave here.

  .venv/bin/python bench/pytorch_llama_train.py --steps 3 --warmup 1
  .venv/bin/python bench/pytorch_llama_train.py --layers 2 --width 128 --heads 4 --kv-heads 2 \\
      --ff 256 --vocab 1000
"""
import argparse
import json
import math
import os
import resource
import statistics
import sys
import time

from peer_env import add_env_args, env_report, maybe_reexec  # bench/ is on sys.path


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=3, help="timed steps")
    p.add_argument("--warmup", type=int, default=1, help="untimed steps before the timed ones")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--layers", type=int, default=30)
    p.add_argument("--width", type=int, default=576)
    p.add_argument("--heads", type=int, default=9)
    p.add_argument("--kv-heads", type=int, default=3)
    p.add_argument("--ff", type=int, default=1536, help="SwiGLU hidden width")
    p.add_argument("--vocab", type=int, default=49152)
    p.add_argument("--norm-eps", type=float, default=1e-5)
    p.add_argument("--rope-base", type=float, default=10000.0)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--grad-clip", type=float, default=1.0, help="max gradient norm; 0 = none")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--fused-adamw", type=int, choices=[0, 1], default=1,
                   help="AdamW(fused=...): 1 (default) is PyTorch's fused CPU kernel, one pass "
                        "over the parameters; 0 its foreach implementation")
    p.add_argument("--quiet", action="store_true", help="no per-step lines on stderr")
    add_env_args(p, omp_wait_policy="unset", mkl_amd=True)
    return p.parse_args()


ARGS = parse_args()
maybe_reexec(ARGS)

import torch  # noqa: E402  (after the re-exec on purpose)
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class RMSNorm(nn.Module):
    def __init__(self, width, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    def __init__(self, width, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, width // heads
        self.q_proj = nn.Linear(width, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(width, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(width, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, width, bias=False)

    def forward(self, x, cos, sin):
        B, T, C = x.shape
        D = self.head_dim
        q = self.q_proj(x).view(B, T, self.heads, D).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kv_heads, D).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv_heads, D).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin  # rotary, half style (i, i + D/2) as Llama
        k = k * cos + rotate_half(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.o_proj(y)


class SwiGLU(nn.Module):
    def __init__(self, width, ff):
        super().__init__()
        self.gate_proj = nn.Linear(width, ff, bias=False)
        self.up_proj = nn.Linear(width, ff, bias=False)
        self.down_proj = nn.Linear(ff, width, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.input_layernorm = RMSNorm(a.width, a.norm_eps)
        self.self_attn = Attention(a.width, a.heads, a.kv_heads)
        self.post_attention_layernorm = RMSNorm(a.width, a.norm_eps)
        self.mlp = SwiGLU(a.width, a.ff)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.embed_tokens = nn.Embedding(a.vocab, a.width)
        self.layers = nn.ModuleList(Block(a) for _ in range(a.layers))
        self.norm = RMSNorm(a.width, a.norm_eps)
        self.lm_head = nn.Linear(a.width, a.vocab, bias=False)
        self.lm_head.weight = self.embed_tokens.weight  # tied
        D = a.width // a.heads
        inv_freq = 1.0 / (a.rope_base ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
        freqs = torch.outer(torch.arange(a.seq, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)  # (T, D)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:  # meshlm's init gpt2: N(0, 0.02), residual projections / sqrt(2L)
                resid = name.endswith("o_proj.weight") or name.endswith("down_proj.weight")
                std = 0.02 / math.sqrt(2 * a.layers) if resid else 0.02
                nn.init.normal_(p, mean=0.0, std=std)

    def forward(self, idx, targets):
        T = idx.shape[1]
        cos, sin = self.cos[:T], self.sin[:T]
        x = self.embed_tokens(idx)
        for block in self.layers:
            x = block(x, cos, sin)
        logits = self.lm_head(self.norm(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def main():
    a = ARGS
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)

    model = Llama(a)
    model.train()
    n_params = sum(p.numel() for p in model.parameters())  # tied weight counted once
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=a.lr, betas=(0.9, 0.95), eps=1e-8,
                            fused=bool(a.fused_adamw))
    fwd = torch.compile(model) if a.compile else model

    gen = torch.Generator().manual_seed(a.seed)
    step_s, losses = [], []
    total = a.warmup + a.steps
    for step in range(total):
        tokens = torch.randint(0, a.vocab, (a.batch, a.seq + 1), generator=gen)
        x, y = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = fwd(x, y)
        loss.backward()
        if a.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.grad_clip)
        opt.step()
        loss_v = loss.item()
        dt = time.perf_counter() - t0
        if step >= a.warmup:
            step_s.append(dt)
            losses.append(loss_v)
        if not a.quiet:
            tag = "warmup" if step < a.warmup else "timed"
            print(f"step {step + 1}/{total} ({tag}) loss {loss_v:.4f} {dt:.3f} s "
                  f"{a.batch * a.seq / dt:.1f} tok/s", file=sys.stderr, flush=True)

    # Training FLOPs per token as meshlm counts them: 6 N_nonembedding + 6 V d + 12 L T d.
    L, d, V, T = a.layers, a.width, a.vocab, a.seq
    kv = a.kv_heads * (d // a.heads)
    n_nonembed = L * (2 * d * d + 2 * d * kv + 3 * d * a.ff + 2 * d) + d
    flops_per_token = 6 * n_nonembed + 6 * V * d + 12 * L * T * d
    med = statistics.median(step_s) if step_s else float("nan")
    tps = a.batch * a.seq / med if step_s else float("nan")
    out = {
        "impl": "pytorch",
        "torch": torch.__version__,
        "tokens_per_s": round(tps, 3),
        "step_s_median": round(med, 5),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
        "gflops": round(tps * flops_per_token / 1e9, 2),
        "flops_per_token": flops_per_token,
        "step_s": [round(s, 5) for s in step_s],
        "loss_last": round(losses[-1], 4) if losses else None,
        "params": n_params,
        "threads": torch.get_num_threads(),
        **env_report(),
        "sdpa": True,
        "compile": a.compile,
        "fused_adamw": bool(a.fused_adamw),
        "grad_clip": a.grad_clip,
        "blas": "mkl" if torch.backends.mkl.is_available() else "other",
        "mkl_amd": "avx2" if "libmkl_intel_cpu_true" in os.environ.get("LD_PRELOAD", "")
                   else "default",
        "config": {"layers": L, "width": d, "heads": a.heads, "kv_heads": a.kv_heads,
                   "ff": a.ff, "vocab": V, "batch": a.batch, "seq": T, "warmup": a.warmup,
                   "steps": a.steps},
    }
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
