#!/usr/bin/env bash
# Reproduces the comparison behind the default run's recipe (bench/default_recipe.md).
#
# Usage: bench/default_recipe.sh [BINARY] [OUT_DIR]
#   BINARY   meshlm binary (default build/meshlm); OUT_DIR (default /tmp/default_recipe)
#   SCREEN=0 skips the 500-step screens; FULL=0 skips the 2000-step runs.
# One training at a time, 2 threads, OMP_WAIT_POLICY=PASSIVE (so that a busy machine does not
# slow the spinning OpenMP threads down). Prints one line per run: name, FLOPs/token, parameters,
# final validation loss (nats/byte), wall seconds; then the samples of the former and the new
# default (same prompt and seed). The full runs take about 5 minutes each on 2 quiet cores.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/meshlm}
OUT=${2:-/tmp/default_recipe}
mkdir -p "$OUT"
export OMP_WAIT_POLICY=PASSIVE

LLAMA="--config.model.norm=rmsnorm --config.model.norm_bias=false --config.model.position=rope
  --config.model.qkv_bias=false --config.model.proj_bias=false --config.model.mlp_bias=false
  --config.model.mlp=swiglu --config.model.d_ff=344 --config.model.tied_head=false
  --config.model.init=fan_in"

run() {  # run NAME STEPS CONFIG [overrides...]
  local name=$1 steps=$2 cfg=$3; shift 3
  local extra=()
  [ "$steps" != 2000 ] && extra=(--config.train.steps="$steps" --config.log.eval_interval=0
    --config.train.final_eval_batches=40 --config.checkpoint.interval=0 --config.log.sample_tokens=0)
  local t0=$SECONDS
  "$BIN" train --config "$cfg" --force --config.train.threads=2 --config.log.dir="$OUT/$name" \
    "${extra[@]}" "$@" > "$OUT/$name.log" 2>&1
  printf '%-28s %s | %s | %s | %ss\n' "$name" \
    "$(grep -o '[0-9.]*M training FLOPs/token' "$OUT/$name.log" | head -1)" \
    "$(grep -o '[0-9.]*[kM] parameters' "$OUT/$name.log" | head -1)" \
    "$(tr '\r' '\n' < "$OUT/$name.log" | grep -o 'val_loss [0-9.]*' | tail -1)" $((SECONDS - t0))
}

if [ "${SCREEN:-1}" = 1 ]; then  # 500 steps (the schedule compressed), 40 validation batches
  run screen_gpt2 500 configs/tiny-gpt2.yaml
  # shellcheck disable=SC2086
  run screen_llama 500 configs/tiny-gpt2.yaml $LLAMA
  # shellcheck disable=SC2086
  run screen_llama_lr6e-3_to0 500 configs/tiny-gpt2.yaml $LLAMA --config.optim.lr=6e-3 \
    --config.optim.end_lr=0
  # shellcheck disable=SC2086
  run screen_llama_lr1e-2_to0_qknorm 500 configs/tiny-gpt2.yaml $LLAMA --config.optim.lr=1e-2 \
    --config.optim.end_lr=0 --config.model.qk_norm=true
fi
if [ "${FULL:-1}" = 1 ]; then  # the full budget: 2000 steps of 16 x 128 tokens
  run gpt2 2000 configs/tiny-gpt2.yaml                              # the former default
  # shellcheck disable=SC2086
  run llama 2000 configs/tiny-gpt2.yaml $LLAMA --config.model.d_ff=340  # = the Llama candidate
  run vq6 2000 configs/tiny-vq.yaml --config.model.n_layer=6 --config.model.vq.d_v=224
  run vq8 2000 configs/tiny-vq.yaml                                 # over the FLOPs budget
  run default 2000 configs/default.yaml                             # = `meshlm train`
  for r in gpt2 default; do
    echo "== sample: $r"
    "$BIN" sample --checkpoint "$OUT/$r" --prompt "The " --max-new-tokens 200 --seed 1
  done
fi
