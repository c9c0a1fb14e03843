"""The PyTorch peer of bench/gemm_libs.cpp: the same training GEMM shapes through torch.mm /
torch.addmm (PyTorch's own BLAS: MKL in the PyPI wheels), printing the same JSON lines with
lib "torch", so bench/gemm_libs.sh tables it beside the C libraries. Run with the .venv's python
(tools/reference/setup_venv.sh); gemm_libs.sh does that with `--libs ...,torch`. On an AMD CPU
MKL runs as the training peer runs it (--mkl-amd avx2, bench/mkl_amd.py).

Row-major as in gemm_libs.cpp: op(A) is A.t() of a contiguous [K, M] tensor when transposed,
which torch passes to its BLAS as a transpose flag, as autograd does for x @ W.t() and dY.t() @ x.
"""
import argparse
import json
import resource
import sys
import os
import time

from mkl_amd import is_amd, mkl_amd_library  # bench/: the script's own folder is on sys.path


def cases(a):
    llama = a.arch == "llama"
    C = a.width or (576 if llama else 768)
    V = a.vocab or (49152 if llama else 50257)
    L = a.layers or (30 if llama else 12)
    H = a.heads or (9 if llama else 12)
    K = a.kv_heads or (3 if llama else H)
    F = a.ff or (1536 if llama else 4 * C)
    if C % H or H % K:
        sys.exit(f"--width {C}, --heads {H}, --kv-heads {K}: the width must divide into the "
                 "heads and the heads into the key/value heads")
    D, N, bias = C // H, a.tokens, not llama
    out = []

    def linear(name, count, I, O, b):
        out.append((name, "fwd", count, False, True, N, O, I, 1.0 if b else 0.0))
        out.append((name, "dX", count, False, False, N, I, O, 0.0))
        out.append((name, "dW", count, True, False, O, I, N, 1.0))

    linear("qkv", L, C, (H + 2 * K) * D, bias)
    linear("attn_proj", L, H * D, C, bias)
    linear("fc", L, C, 2 * F if llama else F, bias)
    linear("fc_proj", L, F, C, bias)
    linear("logits", 1, C, V, False)
    return out, dict(tokens=N, width=C, vocab=V, layers=L)


def operand(rows, cols, trans, gen):
    # Stored [rows, cols] row-major; op() is its transpose when trans.
    t = torch.rand(rows, cols, generator=gen) * 2 - 1
    return t.t() if trans else t


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", default="1,2")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--arch", choices=["gpt2", "llama"], default="gpt2")
    p.add_argument("--tokens", type=int, default=1024)
    for k in ("width", "vocab", "layers", "heads", "kv-heads", "ff"):
        p.add_argument(f"--{k}", type=int, default=0)
    p.add_argument("--only", default="")
    p.add_argument("--mkl-amd", choices=["avx2", "default"], default="avx2")
    return p.parse_args()


def maybe_reexec(a):
    """LD_PRELOAD is read when the process starts: re-execute with it set."""
    if a.mkl_amd != "avx2" or not is_amd() or os.environ.get("MESHLM_BENCH_REEXEC") == "1":
        return
    env = dict(os.environ, MESHLM_BENCH_REEXEC="1")
    env["LD_PRELOAD"] = (env.get("LD_PRELOAD", "") + " " + mkl_amd_library()).strip()
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


ARGS = parse_args()
maybe_reexec(ARGS)

import torch  # noqa: E402  (after the re-exec on purpose)


def main():
    a = ARGS
    threads = [int(t) for t in a.threads.split(",") if t]
    cs, meta = cases(a)
    blas = "mkl" if torch.backends.mkl.is_available() else "other"
    if "libmkl_intel_cpu_true" in os.environ.get("LD_PRELOAD", ""):
        blas += " (AVX2 kernels on AMD)"
    info = f"torch={torch.__version__}; blas={blas}"
    print(json.dumps(dict(type="meta", lib="torch", info=info, omp_max_threads=torch.get_num_threads(),
                          arch=a.arch, reps=a.reps, warmup=a.warmup, **meta)), flush=True)
    gen = torch.Generator().manual_seed(1234)
    ok_all = True
    for layer, pas, count, ta, tb, M, N, K, beta in cs:
        name = f"{layer}.{pas}"
        if a.only and a.only not in name:
            continue
        A = operand(K, M, True, gen) if ta else operand(M, K, False, gen)
        B = operand(N, K, True, gen) if tb else operand(K, N, False, gen)
        Cm = torch.rand(M, N, generator=gen) * 2 - 1

        def run():
            if beta:
                torch.addmm(Cm, A, B, out=Cm)
            else:
                torch.mm(A, B, out=Cm)

        # Correctness, once: sampled entries against float64.
        torch.set_num_threads(threads[0])
        idx = [(0, 0), (M - 1, N - 1)] + [
            (int(torch.randint(M, (1,), generator=gen)), int(torch.randint(N, (1,), generator=gen)))
            for _ in range(14)]
        c0 = [float(Cm[i, j]) for i, j in idx]
        run()
        rel = 0.0
        for (i, j), c in zip(idx, c0):
            prod = A[i, :].double() * B[:, j].double()
            ref = float(prod.sum()) + beta * c
            mag = float(prod.abs().sum()) + abs(beta * c)
            rel = max(rel, abs(float(Cm[i, j]) - ref) / (mag + 1e-30))
        ok = rel <= 1e-4
        ok_all = ok_all and ok
        print(json.dumps(dict(type="check", lib="torch", what=name, ok=ok, max_rel_err=rel)),
              flush=True)
        for th in threads:
            torch.set_num_threads(th)
            for _ in range(a.warmup):
                run()
            ts = []
            cpu0 = cpu_s()
            for _ in range(max(1, a.reps)):
                t0 = time.perf_counter()
                run()
                ts.append(time.perf_counter() - t0)
            util = (cpu_s() - cpu0) / (sum(ts) * th)
            s = sorted(ts)
            med = s[len(s) // 2] if len(s) % 2 else 0.5 * (s[len(s) // 2 - 1] + s[len(s) // 2])
            print(json.dumps(dict(
                type="result", lib="torch", threads=th, layer=layer, **{"pass": pas}, count=count,
                M=M, N=N, K=K, ta=int(ta), tb=int(tb), beta=beta, reps=len(s), median_s=med,
                min_s=s[0], max_s=s[-1], gflops=2.0 * M * N * K / med * 1e-9, cpu_util=util)),
                flush=True)
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
