#!/usr/bin/env bash
# Per-rank memory of data-parallel GPT-2 small training at every ZeRO stage: what `meshlm info`
# plans and the peak RSS each rank really reaches (GNU time), with the ratio to stage 0 (plain
# replicated data parallelism, the peer measured in the same run).
# Usage: bench/zero_memory.sh [ranks (2)] [steps (3)]
set -euo pipefail
cd "$(dirname "$0")/.."
np=${1:-2}
steps=${2:-3}
bin=build/meshlm
[ -x "$bin" ] || { echo "build first: scripts/setup.sh" >&2; exit 1; }
out=bench/out/zero_memory
mkdir -p "$out"
mpirun=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)
common=(--config configs/gpt2-small.yaml --config.data.synthetic=true
        --config.train.steps="$steps" --config.train.batch_size=2 --config.train.threads=1
        --config.checkpoint.interval=0 --config.parallel.data="$np")

echo "GPT-2 small, $np data-parallel ranks x 1 thread, micro-batch 2 x 256 tokens, $steps steps"
printf "%-6s %12s %16s %12s %16s %10s\n" stage "planned MiB" "training peak" "vs stage 0" "process peak" "tokens/s"
base=""
for stage in 0 1 2 3; do
  planned=$("$bin" info "${common[@]}" --config.parallel.zero_stage=$stage |
            awk '/^  total/ {print $2}')
  log="$out/stage$stage.log"
  rm -f "$out"/rss.$stage.*
  OMP_WAIT_POLICY=PASSIVE "${mpirun[@]}" -np "$np" sh -c \
      '/usr/bin/time -f %M -o "$0.$OMPI_COMM_WORLD_RANK" "$@"' "$out/rss.$stage" \
      "$bin" train --force "${common[@]}" --config.parallel.zero_stage=$stage \
      --config.log.dir="$out/run$stage" > "$log" 2>&1
  # The trainer's peak RSS of the largest rank before the final weights are gathered, in MiB.
  peak=$(awk '/peak RSS during training/ {print $(NF-1)}' "$log")
  whole=$(cat "$out"/rss.$stage.* | awk '{if ($1 > m) m = $1} END {printf "%.0f", m / 1024}')
  tps=$(grep -o '[0-9.]*k* tok/s' "$log" | tail -1 | awk '{print $1}')
  [ -z "$base" ] && base=$peak
  printf "%-6s %12s %12s MiB %11.2fx %12s MiB %10s\n" "$stage" "$planned" "$peak" \
      "$(awk -v a="$peak" -v b="$base" 'BEGIN {print a / b}')" "$whole" "$tps"
done
echo "training peak: the largest rank's peak RSS when the last step ends (trainer); process"
echo "peak: GNU time's, to the end (writing model.safetensors, which no rank gathers whole)."
echo "Activations (B=2, T=256) are not sharded by ZeRO. Logs: $out/stage*.log"
