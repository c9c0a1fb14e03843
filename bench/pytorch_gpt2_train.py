#!/usr/bin/python3
"""Plain PyTorch GPT-2 training-step benchmark: the peer meshlm is compared against.

GPT-2 small by default (124M: 12 layers, width 768, 12 heads, vocab 50257, context 1024, tied
embeddings, GELU tanh, pre-LN, biases), fp32 or (--precision bf16) under torch.autocast, AdamW
(betas 0.9/0.95, weight decay 0.1 on the matrices and embeddings; fused where PyTorch has a
fused CPU AdamW, 2.4 and later), trained on uniformly random tokens. Runs --warmup untimed
steps, then --steps timed ones, and prints one JSON line:

  {"impl": "pytorch", "torch": ..., "tokens_per_s": ..., "step_s_median": ...,
   "peak_rss_mib": ..., ...}

Runs with Debian's /usr/bin/python3 + python3-torch 1.13 (no F.scaled_dot_product_attention
there: manual causal attention is used instead; SDPA is used where it exists).

Two environment settings give the peer its best numbers (measured on the 2-core dev VM, see
bench/README.md; both must be in place before the process starts, so the script re-executes
itself with them; 'env' leaves the environment alone):

  --omp-wait-policy PASSIVE (default). Debian's torch runs its own ops on libgomp threads and
    its GEMMs on the *pthread* OpenBLAS (the libopenblas.so.0 alternative), a second thread
    pool. With libgomp's default the idle OpenMP workers spin while OpenBLAS wants the cores.
    PASSIVE: ~+25 % tokens/s.
  --malloc keep (default): GLIBC_TUNABLES with mmap_max=0 and a huge trim_threshold, so freed
    tensors stay in the heap instead of being munmap()ed and page-faulted back in (zero-filled
    by the kernel) every step. ~+20 % tokens/s, a few hundred MiB more peak RSS.

  /usr/bin/python3 bench/pytorch_gpt2_train.py --steps 3 --warmup 1
  /usr/bin/python3 bench/pytorch_gpt2_train.py --layers 2 --width 128 --heads 4 --vocab 1000
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
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--width", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--context", type=int, default=1024, help="max positions (wpe rows)")
    p.add_argument("--lr", type=float, default=6e-4)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
                   help="bf16: the forward under torch.autocast('cpu', dtype=torch.bfloat16) "
                        "(bf16 GEMMs through oneDNN, fp32 master weights and optimizer state; "
                        "needs PyTorch 2.x for scaled_dot_product_attention)")
    p.add_argument("--fused-adamw", type=int, choices=[0, 1], default=None,
                   help="AdamW(fused=...); default 1 where torch has fused CPU AdamW (2.4+)")
    p.add_argument("--quiet", action="store_true", help="no per-step lines on stderr")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="cuda: the model, data and optimizer on GPU 0 (bf16 autocast on the GPU, "
                        "fused CUDA AdamW, SDPA's flash kernel); steps are timed after a "
                        "synchronize and peak_gpu_mib is torch's peak allocation")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile the model (default mode); its compile time falls in the "
                        "warmup steps")
    add_env_args(p, omp_wait_policy="PASSIVE")
    return p.parse_args()


ARGS = parse_args()
maybe_reexec(ARGS)

import torch  # noqa: E402  (after the re-exec on purpose)
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HAS_SDPA = hasattr(F, "scaled_dot_product_attention")


def gelu_tanh(x):
    try:
        return F.gelu(x, approximate="tanh")
    except TypeError:  # torch < 1.12
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


class CausalSelfAttention(nn.Module):
    def __init__(self, width, heads, context):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)
        if not HAS_SDPA:
            mask = torch.tril(torch.ones(context, context, dtype=torch.bool))
            self.register_buffer("mask", mask.view(1, 1, context, context), persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        H, D = self.heads, C // self.heads
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, H, D).transpose(1, 2)
        k = k.view(B, T, H, D).transpose(1, 2)
        v = v.view(B, T, H, D).transpose(1, 2)
        if HAS_SDPA:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
            att = att.masked_fill(~self.mask[:, :, :T, :T], float("-inf"))
            att = F.softmax(att, dim=-1)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.c_fc = nn.Linear(width, 4 * width)
        self.c_proj = nn.Linear(4 * width, width)

    def forward(self, x):
        return self.c_proj(gelu_tanh(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, width, heads, context):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads, context)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = MLP(width)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, layers, width, heads, vocab, context):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(context, width)
        self.h = nn.ModuleList(Block(width, heads, context) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() == 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith("c_proj.weight") else 0.02
                nn.init.normal_(p, mean=0.0, std=std)

    def forward(self, idx, targets):
        B, T = idx.shape
        pos = torch.arange(T, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def openblas_info():
    """Which OpenBLAS torch's GEMMs go through, and pin its thread count (best effort)."""
    info = {}
    try:
        with open("/proc/self/maps") as f:
            libs = sorted({l.split()[-1] for l in f
                           if "/" in l and os.path.basename(l.split()[-1]).startswith("libopenblas")})
        info["openblas_lib"] = libs[0] if libs else None
        if libs:
            import ctypes
            lib = ctypes.CDLL(libs[0])
            lib.openblas_get_corename.restype = ctypes.c_char_p
            info["openblas_core"] = lib.openblas_get_corename().decode()
            # The pthread OpenBLAS does not follow torch.set_num_threads: set it explicitly.
            lib.openblas_set_num_threads(ctypes.c_int(ARGS.threads))
            lib.openblas_get_num_threads.restype = ctypes.c_int
            info["openblas_threads"] = lib.openblas_get_num_threads()
    except Exception as e:  # noqa: BLE001 - informational only
        info["openblas_error"] = str(e)
    return info


def main():
    a = ARGS
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    cuda = a.device == "cuda"
    blas = {} if cuda else openblas_info()

    model = GPT(a.layers, a.width, a.heads, a.vocab, a.context).to(a.device)
    model.train()
    n_params = sum(p.numel() for p in model.parameters())  # tied weight counted once
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
    opt_kwargs = dict(lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    import inspect
    if a.fused_adamw is None:
        a.fused_adamw = int(tuple(int(v) for v in torch.__version__.split(".")[:2]) >= (2, 4))
    if "fused" in inspect.signature(torch.optim.AdamW).parameters:
        # PyTorch 2.x's fused CPU AdamW is its fastest (and leanest) here: measured 385 vs
        # 302 tokens/s for the bf16 step on the 2-core dev VM (bench/README.md).
        opt_kwargs["fused"] = bool(a.fused_adamw)
    if cuda:
        opt_kwargs["fused"] = True  # torch's fastest CUDA AdamW
    opt = torch.optim.AdamW(groups, **opt_kwargs)
    step_model = torch.compile(model) if a.compile else model

    gen = torch.Generator().manual_seed(a.seed)
    step_s, losses = [], []
    total = a.warmup + a.steps
    for step in range(total):
        tokens = torch.randint(0, a.vocab, (a.batch, a.seq + 1), generator=gen)
        x, y = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
        x, y = x.to(a.device), y.to(a.device)
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        if a.precision == "bf16":
            with torch.autocast(a.device, dtype=torch.bfloat16):
                loss = step_model(x, y)
        else:
            loss = step_model(x, y)
        loss.backward()
        opt.step()
        loss_v = loss.item()  # waits for the step on the GPU too
        dt = time.perf_counter() - t0
        if step >= a.warmup:
            step_s.append(dt)
            losses.append(loss_v)
        if not a.quiet:
            tag = "warmup" if step < a.warmup else "timed"
            print(f"step {step + 1}/{total} ({tag}) loss {loss_v:.4f} {dt:.3f} s "
                  f"{a.batch * a.seq / dt:.1f} tok/s", file=sys.stderr, flush=True)

    L, d, V, T = a.layers, a.width, a.vocab, a.seq
    n_nonembed = 12 * L * d * d + 13 * L * d + 2 * d
    flops_per_token = 6 * n_nonembed + 6 * V * d + 12 * L * T * d
    med = statistics.median(step_s) if step_s else float("nan")
    tps = a.batch * a.seq / med if step_s else float("nan")
    out = {
        "impl": "pytorch",
        "torch": torch.__version__,
        "precision": a.precision,
        "fused_adamw": bool(a.fused_adamw),
        "tokens_per_s": round(tps, 3),
        "step_s_median": round(med, 5),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
        "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "compile": a.compile,
        "peak_gpu_mib": round(torch.cuda.max_memory_allocated() / 2**20, 1) if cuda else None,
        "gflops": round(tps * flops_per_token / 1e9, 2),
        "flops_per_token": flops_per_token,
        "step_s": [round(s, 5) for s in step_s],
        "loss_last": round(losses[-1], 4) if losses else None,
        "params": n_params,
        "threads": torch.get_num_threads(),
        **env_report(),
        "sdpa": HAS_SDPA,
        "config": {"layers": L, "width": d, "heads": a.heads, "vocab": V, "context": a.context,
                   "batch": a.batch, "seq": T, "warmup": a.warmup, "steps": a.steps},
        **blas,
    }
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
