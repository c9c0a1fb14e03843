#!/usr/bin/env bash
# Serving throughput and latency at concurrency 1, 8 and 32 (bench/serve_bench.py) against
# `meshlm serve` on loopback, with a GPT-2-small-shaped model on the byte tokenizer (12 layers,
# d_model 768, 85M parameters; weights from one training step: speed does not depend on them).
# The model run is made once under bench/out/serve/. Needs build/meshlm.
#   bench/serve_bench.sh [extra serve_bench.py flags]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
meshlm=${MESHLM:-$root/build/meshlm}
threads=${THREADS:-2}
out=$root/bench/out/serve
mkdir -p "$out"
if [ ! -f "$out/run/model.safetensors" ]; then
  printf 'bench %d\n%%\n' $(seq 1 400) > "$out/corpus.txt"
  # A GPT-2 of GPT-2 small's shape (the default run's Transformer-VQ is not served yet).
  "$meshlm" train --config "$root/configs/tiny-gpt2.yaml" --config.model.n_layer=12 \
    --config.model.d_model=768 --config.model.n_head=12 --config.model.max_seq_len=256 \
    --config.train.seq_len=64 \
    --config.train.batch_size=1 --config.train.steps=1 --config.train.threads="$threads" \
    --config.log.sample_tokens=0 --config.log.eval_interval=0 \
    --config.data.path="$out/corpus.txt" --config.data.cache_dir="$out/cache" \
    --config.log.dir="$out/run" > "$out/train.log" 2>&1 || { cat "$out/train.log"; exit 1; }
fi
"$meshlm" serve --checkpoint "$out/run" --port 0 --threads "$threads" --max-running 32 \
  > "$out/serve.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  port=$(sed -n 's#.*listening on http://127\.0\.0\.1:\([0-9]*\).*#\1#p' "$out/serve.log")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { cat "$out/serve.log"; exit 1; }
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$root/bench/serve_bench.py" "http://127.0.0.1:$port" "$@" | tee "$out/results.txt"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
