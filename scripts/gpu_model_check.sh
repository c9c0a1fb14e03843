#!/usr/bin/env bash
# meshlm's own model on the GPU: sections 3-4 of scripts/gpu_check.sh and meshlm's row of
# section 6, as markdown on stdout (the runs' output goes to LOG). Called by gpu_check.sh:
#
#   scripts/gpu_model_check.sh BUNDLE WORKDIR LOG [FLOPS_PER_TOKEN]
#
# 3. 50 steps of the former default run (configs/tiny-gpt2.yaml, on the bundle's copy of its
#    corpus; the default run's Transformer-VQ does not train on the GPU yet) and of GPT-2 small
#    (synthetic tokens, 2 x 256 per step) with train.device=cuda against train.device=cpu, fp32.
# 4. Exact resume on the GPU: 40 steps against 20 + 20 resumed from the step-20 checkpoint, the
#    final model.safetensors compared byte for byte.
# 6. GPT-2 124M, bf16, batch 16 x T 1024, 10 steps: tokens/s (median of steps 4-10), MFU
#    against the GPU's dense bf16 peak, peak GPU memory (nvidia-smi, sampled every 100 ms);
#    then where its step goes, op by op (steps 4-5 of a traced run, bench/trace_ops.py).
#
# GPU_CHECK_DEVICE=cpu runs the "GPU" side on the CPU: a dry run of this script on any machine.
set -uo pipefail
bundle=$1 work=$2 log=$3 fpt=${4:-}
dev=${GPU_CHECK_DEVICE:-cuda}
m="$bundle/bin/meshlm"
corpus="$(cd "$bundle" && pwd)/fortunes"
mkdir -p "$work"

# train NAME ARGS...: a run in $work/NAME; its output in $work/NAME.out and the log.
train() {
  local name=$1
  shift
  rm -rf "${work:?}/$name"
  timeout 300 "$m" train --config.log.dir="$work/$name" "$@" >"$work/$name.out" 2>&1
  local rc=$?
  { echo "== $name (exit $rc): $m train $*"; cat "$work/$name.out"; } >>"$log"
  return $rc
}
# The per-step losses of a run's output, one per line.
losses() { sed -n 's/^step *[0-9]*\/[0-9]* | loss \([0-9.naif-]*\) .*/\1/p' "$work/$1.out"; }
# | what | GPU loss first / last | CPU loss first / last | max abs diff over the steps |
compare() {
  paste <(losses "$2") <(losses "$3") | awk -v what="$1" '
    NR == 1 { g1 = $1; c1 = $2 }
    { d = $1 - $2; if (d < 0) d = -d; if (d > max) max = d; g = $1; c = $2; n++ }
    END {
      if (n == 0) { printf "| %s | failed (see gpu_check.log) | | | |\n", what; exit }
      printf "| %s | %d | %s / %s | %s / %s | %.2e |\n", what, n, g1, g, c1, c, max }'
}

default_args=(--config configs/tiny-gpt2.yaml --config.data.path="$corpus"
  --config.train.steps=50 --config.log.interval=1
  --config.log.eval_interval=0 --config.log.sample_tokens=0 --config.train.precision=fp32)
gpt2_args=(--config configs/gpt2-small.yaml --config.data.synthetic=true --config.train.steps=50
  --config.train.batch_size=2 --config.train.seq_len=256 --config.train.precision=fp32)

echo "## 3. Training on the GPU against the CPU"
echo
echo "Every model family, 4 optimizer steps of a Learner on cuda and on cpu (cuda_train_test):"
echo
"$bundle/bin/cuda_train_test" >"$work/train_test.out" 2>&1
train_rc=$?
cat "$work/train_test.out" >>"$log"
echo '```'
grep -E '^\[ trained  \]|^\[  (PASSED|FAILED) ' "$work/train_test.out"
echo '```'
echo "(exit $train_rc)"
echo
# Several ranks on GPUs: the Learner over NCCL meshes against MPI on the CPU (DP 2, ZeRO 0-3,
# TP 2). Two ranks need two GPUs (NCCL refuses two ranks on one GPU): the test says why it
# skips; without mpirun on the host it cannot start at all.
echo "Two ranks over NCCL (DP 2 at ZeRO 0-3, TP 2) against two MPI ranks on the CPU" \
  "(cuda_mesh_mpi_test):"
echo
mpirun_bin=$(command -v mpirun || true)
if [ -n "$mpirun_bin" ]; then
  timeout 300 "$mpirun_bin" --allow-run-as-root --oversubscribe -np 2 \
    -x LD_LIBRARY_PATH -x MESHLM_COMM_TIMEOUT=60 -x OMP_NUM_THREADS=1 \
    "$bundle/bin/cuda_mesh_mpi_test" >"$work/mesh_test.out" 2>&1
  mesh_rc=$?
  cat "$work/mesh_test.out" >>"$log"
  echo '```'
  grep -E '^\[ trained  \]|^\[  (PASSED|FAILED|SKIPPED) |Skipped|ranks need' "$work/mesh_test.out"
  echo '```'
  echo "(exit $mesh_rc)"
else
  echo "not run: no mpirun on this host"
fi
echo
echo "50 steps of \`meshlm train\`, train.device=cuda against train.device=cpu, fp32:"
echo
echo "| run | steps | GPU loss first / last | CPU loss first / last | max abs loss diff |"
echo "|---|---|---|---|---|"
train default_gpu "${default_args[@]}" --config.train.device="$dev"
train default_cpu "${default_args[@]}" --config.train.device=cpu
compare "former default run (0.84M GPT-2, fortunes)" default_gpu default_cpu
train gpt2_gpu "${gpt2_args[@]}" --config.train.device="$dev"
train gpt2_cpu "${gpt2_args[@]}" --config.train.device=cpu
compare "GPT-2 small (124M, synthetic, 2 x 256)" gpt2_gpu gpt2_cpu
grep -h "^device:" "$work/default_gpu.out" | head -1 | sed 's/^/GPU run: /'
echo

echo "## 4. Exact resume on the GPU"
echo
resume_args=("${default_args[@]}" --config.train.steps=40 --config.checkpoint.interval=20
  --config.train.device="$dev")
train whole "${resume_args[@]}"
train resumed --resume "$work/whole/checkpoints/step_20" --config.log.dir="$work/resumed" \
  --config.train.device="$dev"
# Both runs must have finished: 40 losses, 20 after the resume, and both weight files.
same_losses=no
if [ "$(losses whole | wc -l)" -eq 40 ] && [ "$(losses resumed | wc -l)" -eq 20 ] &&
  diff <(losses whole | tail -20) <(losses resumed) >/dev/null; then
  same_losses=yes
fi
same_weights=no
[ -s "$work/whole/model.safetensors" ] &&
  cmp -s "$work/whole/model.safetensors" "$work/resumed/model.safetensors" && same_weights=yes
echo "40 steps uninterrupted against 20 + 20 resumed from step_20: losses of steps 21-40" \
  "identical: $same_losses; final model.safetensors byte-identical: $same_weights"
echo

echo "## 6 (meshlm). GPT-2 124M, bf16, batch 16 x T 1024, AdamW"
echo
echo "| implementation | tokens/s | step (s) | TFLOP/s | MFU | peak GPU memory (MiB) |"
echo "|---|---|---|---|---|---|"
nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 >"$work/mem.txt" &
smi=$!
train gpt2_bf16 --config configs/gpt2-small.yaml --config.data.synthetic=true \
  --config.train.batch_size=16 --config.train.seq_len=1024 --config.train.precision=bf16 \
  --config.train.steps=10 --config.log.interval=1 --config.train.device="$dev"
kill "$smi" 2>/dev/null
wait "$smi" 2>/dev/null
GPU="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" FPT="$fpt" python3 - \
  "$work/gpt2_bf16/metrics.jsonl" "$work/mem.txt" <<'EOF' ||
import json, os, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"tokens_per_s"' in l]
tps = statistics.median(r["tokens_per_s"] for r in rows if r["step"] >= 4)
mem = [float(x) for x in open(sys.argv[2]) if x.strip()]
name = os.environ["GPU"]
peak = 756e12 if "PCIe" in name else 835e12 if "NVL" in name else 989.4e12
fpt = float(os.environ["FPT"]) if os.environ["FPT"] else 6 * 124.4e6 + 12 * 12 * 1024 * 768
flops = tps * fpt
print(f"| meshlm (train.device=cuda) | {tps:.0f} | {16 * 1024 / tps:.4f} | {flops / 1e12:.1f} | "
      f"{100 * flops / peak:.1f} % | {max(mem) - min(mem):.0f} |")
EOF
  echo "| meshlm (train.device=cuda) | failed (see gpu_check.log) | | | | |"
echo
# A/B against the previous binary (gpu_bundle.sh with MESHLM_GPU_PREV): both alternate, two
# runs each, so a speed change is measured side by side on this GPU.
if [ -x "$bundle/bin/meshlm_prev" ]; then
  echo "The previous binary ($(cat "$bundle/prev_commit" 2>/dev/null || echo '?')) against this" \
    "one, alternating, 10 steps each (tokens/s, median of steps 4-10):"
  echo
  echo "| run | previous | this | this / previous |"
  echo "|---|---|---|---|"
  this=$m
  for round in 1 2; do
    for side in prev this; do
      m=$this
      [ "$side" = prev ] && m="$bundle/bin/meshlm_prev"
      train "ab_${side}_$round" --config configs/gpt2-small.yaml \
        --config.data.synthetic=true --config.train.batch_size=16 --config.train.seq_len=1024 \
        --config.train.precision=bf16 --config.train.steps=10 --config.log.interval=1 \
        --config.train.device="$dev"
    done
    m=$this
    python3 - "$work/ab_prev_$round/metrics.jsonl" "$work/ab_this_$round/metrics.jsonl" \
      "$round" <<'EOF' || echo "| $round | failed (see gpu_check.log) | | |"
import json, statistics, sys
def tps(path):
    rows = [json.loads(l) for l in open(path) if '"tokens_per_s"' in l]
    return statistics.median(r["tokens_per_s"] for r in rows if r["step"] >= 4)
a, b = tps(sys.argv[1]), tps(sys.argv[2])
print(f"| {sys.argv[3]} | {a:.0f} | {b:.0f} | {b / a:.3f} |")
EOF
  done
  echo
fi
# Where that step goes: steps 4-5 traced, each GPU op timed to the end of its kernels (the
# waits cost a little: the traced steps are slower than the row above).
echo "Where its step goes (steps 4-5 traced, per op; bench/trace_ops.py):"
echo
train gpt2_trace --config configs/gpt2-small.yaml --config.data.synthetic=true \
  --config.train.batch_size=16 --config.train.seq_len=1024 --config.train.precision=bf16 \
  --config.train.steps=6 --config.log.interval=1 --config.train.device="$dev" \
  '--config.log.profile_steps=[4,5]' &&
  python3 bench/trace_ops.py "$work/gpt2_trace/trace.json" --top 20 ||
  echo "(the traced run failed: see gpu_check.log)"
