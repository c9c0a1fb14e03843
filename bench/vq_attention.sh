#!/usr/bin/env bash
# Transformer-VQ's linear time: forward + backward milliseconds per token of a one-block model of
# VQ attention (d_model 256, d_k 128, d_v 512, 512 codes, blocks of 256) and of the model's full
# softmax attention at the same width (4 heads), one sequence of T = 512 ... 16384 tokens, 2
# threads. Prints a row per length and the ratio of the longest's time per token to the
# shortest's: VQ's stays flat, full attention's grows with T.
# Needs: ninja -C build vq_attention_bench.
#   bench/vq_attention.sh [REPS]      (default 2)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
out=$root/bench/out
mkdir -p "$out"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) (a busy machine distorts these numbers)"
"$build/bench/vq_attention_bench" --threads "${THREADS:-2}" --reps "${1:-2}" | tee "$out/vq_attention.txt"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
