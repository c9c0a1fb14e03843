#!/usr/bin/env bash
# Builds gemm_openblas / gemm_blis / gemm_onednn (bench/gemm_libs.cpp) and prints SGEMM GFLOP/s
# per library and thread count for the training shapes of GPT-2 small (--arch gpt2) or of the
# Llama-style model bench/train_llama_small.sh trains (--arch llama), plus the time one training
# step's worth of these GEMMs takes with each library. See bench/README.md.
#
#   bench/gemm_libs.sh [--reps 5] [--warmup 1] [--rounds 2] [--threads 1,2] [--arch gpt2|llama]
#                      [--isa native|avx2|both] [--libs openblas,blis,onednn] [--only SUBSTR]
#
# --libs may also name torch: PyTorch's own GEMMs (torch.mm / torch.addmm, MKL in the PyPI
#   wheels, run as the training peers run it) on the same shapes, from bench/gemm_torch.py with
#   $PYTHON (default .venv/bin/python).
# --rounds R runs the libraries R times, interleaved (openblas, blis, onednn, openblas, ...), and
#   keeps each shape's best per-round median: a burst of load from another process then hurts
#   one round, not one library. The spread between rounds is printed as a noise indicator.
# --isa avx2 caps OpenBLAS (OPENBLAS_CORETYPE=Haswell) and oneDNN (ONEDNN_MAX_CPU_ISA=AVX2) to
#   their AVX2 kernels, i.e. what they would do on an AVX2-only CPU. BLIS 0.9 cannot be forced
#   and picks its own sub-config (printed in the header).
#
# Environment: BUILD_DIR (default build-bench), OUT_DIR (default bench/out, git-ignored), PYTHON.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-bench}"
OUT_DIR="${OUT_DIR:-$ROOT/bench/out}"
REPS=5
WARMUP=1
ROUNDS=2
THREADS=1,2
ISA=native
LIBS=openblas,blis,onednn
ONLY=""
ARCH=gpt2
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) REPS="$2"; shift 2 ;;
    --warmup) WARMUP="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --isa) ISA="$2"; shift 2 ;;
    --libs) LIBS="$2"; shift 2 ;;
    --only) ONLY="$2"; shift 2 ;;
    --arch) ARCH="$2"; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

echo "== configuring and building in $BUILD_DIR" >&2
mkdir -p "$BUILD_DIR"
cmake -S "$ROOT/bench" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >"$BUILD_DIR/bench-cmake.log" 2>&1 \
  || { cat "$BUILD_DIR/bench-cmake.log" >&2; exit 1; }
grep -E '^-- bench:' "$BUILD_DIR/bench-cmake.log" >&2 || true
cmake --build "$BUILD_DIR" --target gemm_libs -j"$(nproc)" >"$BUILD_DIR/bench-build.log" 2>&1 \
  || { cat "$BUILD_DIR/bench-build.log" >&2; exit 1; }

mkdir -p "$OUT_DIR"
IFS=',' read -r -a lib_list <<<"$LIBS"
available=()
[[ "$ARCH" == gpt2 || "$ARCH" == llama ]] || { echo "--arch must be gpt2 or llama" >&2; exit 2; }
for lib in "${lib_list[@]}"; do
  if [[ "$lib" == torch ]]; then
    if "$PYTHON" -c "import torch" 2>/dev/null; then
      available+=(torch)
    else
      echo "== torch: $PYTHON cannot import torch (tools/reference/setup_venv.sh), skipped" >&2
    fi
  elif [[ -x "$BUILD_DIR/gemm_$lib" ]]; then
    available+=("$lib")
  else
    echo "== $lib: not built (library not installed?), skipped" >&2
  fi
done
[[ ${#available[@]} -gt 0 ]] || { echo "no GEMM backend was built" >&2; exit 1; }

case "$ISA" in
  native) isas=(native) ;;
  avx2) isas=(avx2) ;;
  both) isas=(native avx2) ;;
  *) echo "--isa must be native, avx2 or both" >&2; exit 2 ;;
esac

args=(--reps "$REPS" --warmup "$WARMUP" --threads "$THREADS" --arch "$ARCH")
[[ -n "$ONLY" ]] && args+=(--only "$ONLY")

files=()
for isa in "${isas[@]}"; do
  for ((r = 1; r <= ROUNDS; r++)); do
    for lib in "${available[@]}"; do
      f="$OUT_DIR/gemm_libs.$ARCH.$isa.$lib.r$r.jsonl"
      echo "== isa=$isa round $r/$ROUNDS: $lib" >&2
      env_args=()
      if [[ "$isa" == avx2 ]]; then
        env_args=(OPENBLAS_CORETYPE=Haswell ONEDNN_MAX_CPU_ISA=AVX2 DNNL_MAX_CPU_ISA=AVX2)
      fi
      cmd=("$BUILD_DIR/gemm_$lib")
      [[ "$lib" == torch ]] && cmd=("$PYTHON" "$ROOT/bench/gemm_torch.py")
      if ! env "${env_args[@]}" "${cmd[@]}" "${args[@]}" >"$f"; then
        echo "== $lib exited non-zero (a correctness check failed?), see $f" >&2
      fi
      # Tag each line with the ISA mode and round for the summary.
      sed -i "s/^{/{\"isa\":\"$isa\",\"round\":$r,/" "$f"
      files+=("$f")
    done
  done
done

if ! command -v python3 >/dev/null; then
  echo "python3 not found; raw results in:" "${files[@]}"
  exit 0
fi

python3 - "${files[@]}" <<'EOF'
import json, sys
from collections import defaultdict

rows = [json.loads(l) for f in sys.argv[1:] for l in open(f) if l.strip()]
isas = list(dict.fromkeys(r["isa"] for r in rows))
libs = list(dict.fromkeys(r["lib"] for r in rows))
threads = sorted({r["threads"] for r in rows if r["type"] == "result"})

for isa in isas:
    R = [r for r in rows if r["isa"] == isa]
    print(f"\n### SGEMM GFLOP/s, {next((r['arch'] for r in R if 'arch' in r), 'gpt2')} shapes, isa={isa} (median of reps, best of rounds)")
    for m in R:
        if m["type"] == "meta" and m["round"] == 1:
            print(f"  {m['lib']:9s} {m['info']}")
    bad = [c for c in R if c["type"] == "check" and not c["ok"]]
    checks = [c for c in R if c["type"] == "check"]
    print(f"  correctness checks: {len(checks) - len(bad)}/{len(checks)} ok"
          + ("" if not bad else "  FAILED: " + ", ".join(f"{c['lib']}:{c['what']}" for c in bad)))

    # best (min) per-round median time per (lib, threads, shape); per-round values for noise
    best = {}
    per_round = defaultdict(dict)
    util = {}
    shapes = []
    for r in R:
        if r["type"] != "result":
            continue
        shape = (r["layer"], r["pass"], r["M"], r["N"], r["K"], r["ta"], r["tb"], r["count"])
        if shape not in shapes:
            shapes.append(shape)
        k = (r["lib"], r["threads"], shape)
        best[k] = min(best.get(k, float("inf")), r["median_s"])
        per_round[(r["lib"], r["threads"], r["round"])][shape] = r["median_s"]
        ukey = (r["lib"], r["threads"])
        util[ukey] = min(util.get(ukey, 9.0), r.get("cpu_util", 9.0))

    cols = [(l, t) for t in threads for l in libs]
    head = f"{'shape':<16}{'M x N x K':>19} {'op':>4} {'x':>3} |" + "".join(
        f"{l[:8] + ' ' + str(t) + 't':>13}" for l, t in cols)
    print(head)
    print("-" * len(head))
    for s in shapes:
        layer, pas, M, N, K, ta, tb, count = s
        op = ("T" if ta else "N") + ("T" if tb else "N")
        line = f"{layer + '.' + pas:<16}{f'{M}x{N}x{K}':>19} {op:>4} {count:>3} |"
        vals = {c: 2.0 * M * N * K / best[(c[0], c[1], s)] * 1e-9 for c in cols if (c[0], c[1], s) in best}
        for c in cols:
            v = vals.get(c)
            if v is None:
                line += f"{'-':>13}"
            else:
                top = max(vv for (l, tt), vv in vals.items() if tt == c[1])
                line += f"{v:>12.1f}{'*' if v == top else ' '}"
        print(line)
    print("(* = fastest library at that thread count; op = transposes of A,B row-major; "
          "x = calls per training step)")

    total_flops = sum(2.0 * s[2] * s[3] * s[4] * s[7] for s in shapes)
    print(f"\none training step's worth of these GEMMs ({total_flops / 1e9:.0f} GFLOP; "
          f"each shape x calls per step):")
    print(f"{'library':<10}{'threads':>8}{'step GEMM s':>13}{'GFLOP/s':>10}{'vs best':>9}"
          f"{'round spread':>14}{'min cpu util':>14}")
    for t in threads:
        totals = {}
        for l in libs:
            if all((l, t, s) in best for s in shapes):
                totals[l] = sum(best[(l, t, s)] * s[7] for s in shapes)
        if not totals:
            continue
        fastest = min(totals.values())
        for l, tot in totals.items():
            rounds = [per_round[k] for k in per_round if k[0] == l and k[1] == t]
            rt = [sum(rd[s] * s[7] for s in shapes) for rd in rounds if len(rd) == len(shapes)]
            spread = (max(rt) / min(rt) - 1) * 100 if len(rt) > 1 else 0.0
            print(f"{l:<10}{t:>8}{tot:>13.3f}{total_flops / tot * 1e-9:>10.1f}"
                  f"{tot / fastest:>8.2f}x{spread:>12.1f} %{util.get((l, t), 0):>14.2f}")
print("\n(round spread: max/min - 1 of the step total over the rounds; min cpu util: lowest "
      "process CPU time / (wall x threads) over the timed loops, ~1.0 when the cores were ours, "
      "reads low for very short loops. A large spread or a low util means another process was "
      "running: rerun)")
EOF
