#!/usr/bin/env bash
# Generation speed, GPT-2 small (124M, random weights), 128-token prompt, 256 new tokens, 2
# threads: meshlm's KV-cache decoder (fp32 and bf16 weights) against transformers' generate
# (fp32, use_cache=True), in one run. Greedy by default (TEMPERATURE=0); TEMPERATURE=0.8
# TOP_P=0.9 samples instead, both sides from the same filtered softmax (transformers with
# do_sample and top_k off). Prints the best of --reps runs of each, the
# ratio, and meshlm's mean step time over the first and last 64 new tokens (flatness).
# Needs: ninja -C build generate_bench; .venv with torch + transformers (tools/reference/setup_venv.sh).
#   bench/generate_bench.sh [REPS]      (default 3)
#   TEMPERATURE=0.8 TOP_P=0.9 bench/generate_bench.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
py=${PYTHON:-$root/.venv/bin/python}
reps=${1:-3}
threads=${THREADS:-2}
sampling=(--temperature "${TEMPERATURE:-0}" --top-p "${TOP_P:-1}")
out=$root/bench/out/generate
mkdir -p "$out"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) (a busy machine halves these numbers)"
"$build/bench/generate_bench" --threads "$threads" --reps "$reps" "${sampling[@]}" \
  | tee "$out/meshlm_fp32.txt"
"$build/bench/generate_bench" --threads "$threads" --reps "$reps" --precision bf16 "${sampling[@]}" \
  | tee "$out/meshlm_bf16.txt"
OMP_NUM_THREADS=$threads "$py" "$root/bench/hf_generate.py" --threads "$threads" --reps "$reps" \
  "${sampling[@]}" \
  | tee "$out/transformers.txt"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
best() { sed -n 's/.*: \([0-9.]*\) tokens\/s.*/\1/p' "$1" | sort -g | tail -1; }
hf=$(best "$out/transformers.txt")
for p in fp32 bf16; do
  m=$(best "$out/meshlm_$p.txt")
  line=$(grep -F " $m tokens/s" "$out/meshlm_$p.txt" | head -1)
  awk -v m="$m" -v hf="$hf" -v p="$p" -v line="$line" 'BEGIN {
    printf "meshlm %s %.2f tokens/s = %.2fx transformers (%.2f tokens/s)\n  best run: %s\n",
           p, m, m / hf, hf, line }'
done
