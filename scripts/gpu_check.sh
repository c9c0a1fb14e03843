#!/usr/bin/env bash
# The GPU host's check, one command, one table (markdown, on stdout and in gpu_check.md under
# $OUT or the current directory). Runs from a checkout that holds gpu_bundle/ (made by
# scripts/gpu_bundle.sh on the CPU machine); needs the host's NVIDIA driver, its CUDA toolkit
# libraries (cuBLASLt, NCCL) of the bundle's major version and, for the peer rows, its PyTorch.
# About 1 minute on an H100 (the op tests 2 s, the two peers the rest).
#
#   scripts/gpu_check.sh [--skip-peer]
#
# Sections (issue "one model, two backends"):
#   1. every CUDA op against its CPU result (cuda_ops_test: max |err| and its share of the op's
#      per-dtype tolerance);
#   3-4. 50 training steps on the GPU against the CPU, two ranks over NCCL (DP, ZeRO 0-3, TP:
#      needs two GPUs and the host's mpirun, else says why not), exact resume on the GPU
#      (scripts/gpu_model_check.sh);
#   2, 5. the PyTorch reference fixture on the GPU, decoding on the GPU against the CPU, sample
#      and a serve request with --device cuda (scripts/gpu_decode_check.sh);
#   6. GPT-2 124M, bf16, T = 1024: PyTorch eager and torch.compile (tokens/s, MFU against the
#      GPU's dense bf16 peak, peak GPU memory), and meshlm's train.device=cuda beside them.
set -uo pipefail
cd "$(dirname "$0")/.."
skip_peer=0
[ "${1:-}" = "--skip-peer" ] && skip_peer=1
bundle=gpu_bundle
report="${OUT:-.}/gpu_check.md"
log="${OUT:-.}/gpu_check.log"
: >"$log"
[ -d "$bundle/bin" ] || [ ! -f "$bundle/bin.tar.xz" ] || tar -C "$bundle" -xJf "$bundle/bin.tar.xz"
if [ ! -x "$bundle/bin/cuda_ops_test" ]; then
  echo "gpu_check: no $bundle/ here: run scripts/gpu_bundle.sh on the CPU machine first" >&2
  exit 2
fi
cuda_lib=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -e "$d/libcublasLt.so.$(cat "$bundle/cuda_major")" ] && cuda_lib=$d && break
done
if [ -z "$cuda_lib" ]; then
  echo "gpu_check: no libcublasLt.so.$(cat "$bundle/cuda_major") under /usr/local/cuda: the" \
    "bundle was built with CUDA $(cat "$bundle/cuda_major"), this host needs that toolkit" >&2
  exit 2
fi
[ -d "$bundle/lib" ] || tar -C "$bundle" -xJf "$bundle/lib.tar.xz"
export LD_LIBRARY_PATH="$PWD/$bundle/lib:$cuda_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)

{
  echo "# meshlm GPU check ($(date -u +%F\ %H:%MZ), bundle $(cat "$bundle/commit"))"
  echo
  echo "GPU: $gpu; CUDA toolkit libraries from $cuda_lib"
  echo
  echo "## 1. CUDA ops against the CPU"
  echo
} >"$report"

# 1. The op tests: each "[ checked ]" line is one output compared; gtest's summary says which
# tests failed.
ops_out=$("$bundle/bin/cuda_ops_test" 2>&1)
ops_rc=$?
echo "$ops_out" >>"$log"
{
  echo "| comparison | values | max abs err | max err / tolerance |"
  echo "|---|---|---|---|"
  # "[ checked  ] NAME   COUNT values  max |err| E  max |err|/allowed R" (NAME may hold spaces)
  echo "$ops_out" | awk '/^\[ checked  \]/ {
    for (i = 4; i <= NF; i++) if ($i == "values") break
    name = $4; for (j = 5; j < i - 1; j++) name = name " " $j
    printf "| %s | %s | %s | %s |\n", name, $(i - 1), $(i + 3), $(i + 6) }'
  echo
  echo "cuda_ops_test: $(echo "$ops_out" | grep -E '^\[  (PASSED|FAILED|SKIPPED) ' | tr '\n' ' ')(exit $ops_rc)"
  echo "$ops_out" | grep -E '^\[  FAILED  \] [A-Za-z]' | sed 's/^/    /'
  echo
} >>"$report"

# 6. The peers. FLOPs per token as in bench/pytorch_gpt2_train.py (6N + 12 L T C); the dense
# bf16 peak of the GPU by its name (H100 SXM 989.4 TFLOP/s, PCIe 756, NVL 835; H200 as SXM).
if [ "$skip_peer" -eq 0 ]; then
  {
    echo "## 6. GPT-2 124M, bf16 autocast, batch 16 x T 1024, fused AdamW"
    echo
    echo "| implementation | tokens/s | step (s, median of 10) | TFLOP/s | MFU | peak GPU memory (MiB) |"
    echo "|---|---|---|---|---|---|"
  } >>"$report"
  for mode in eager compile; do
    flag=""
    [ "$mode" = compile ] && flag=--compile
    line=$(timeout 300 python3 bench/pytorch_gpt2_train.py --device cuda --precision bf16 \
      --batch 16 --seq 1024 --steps 10 --warmup 3 --quiet $flag 2>>"$log" | tail -1)
    echo "$line" >>"$log"
    GPU="$gpu" MODE="$mode" python3 - "$line" >>"$report" <<'EOF' || echo "| PyTorch $mode | failed (see gpu_check.log) | | | | |" >>"$report"
import json, os, sys
r = json.loads(sys.argv[1])
name = os.environ["GPU"]
peak = 756e12 if "PCIe" in name else 835e12 if "NVL" in name else 989.4e12
flops = r["tokens_per_s"] * r["flops_per_token"]
print(f"| PyTorch {r['torch']} {os.environ['MODE']} | {r['tokens_per_s']:.0f} | "
      f"{r['step_s_median']:.4f} | {flops / 1e12:.1f} | {100 * flops / peak:.1f} % | "
      f"{r['peak_gpu_mib']:.0f} |")
EOF
  done
fi
# 3, 4 and meshlm's row of 6: meshlm training on the GPU.
fpt=$(sed -n 's/.*"flops_per_token": *\([0-9.e+]*\).*/\1/p' "$log" | head -1)
runs=$(mktemp -d)
bash scripts/gpu_model_check.sh "$bundle" "$runs" "$log" "$fpt" >>"$report"
# 2 and 5: the reference fixture and decoding on the GPU (sample / serve use the runs of 3-6).
bash scripts/gpu_decode_check.sh "$bundle" "$runs" "$log" >>"$report"
rm -rf "$runs"
cat "$report"
[ "$ops_rc" -eq 0 ]
