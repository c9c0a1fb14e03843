#!/usr/bin/env bash
# sample, train and serve on a quiet machine and beside CPU hogs, for one or two binaries
# (issue "a busy machine does not collapse us"; the results are in bench/README.md).
#
# Usage: bench/busy_machine.sh [OLD_BINARY] [NEW_BINARY]
#   NEW_BINARY defaults to build/meshlm; with OLD_BINARY both run side by side, in this run.
#   HOGS=N busy loops beside the loaded runs (default 1); REPS=N rounds over every row (default
#   3; medians are printed); OUT=DIR keeps the files (default /tmp/busy_machine). Run it on an otherwise idle machine: the "quiet" rows mean quiet.
# Every row uses the binary's own defaults (threads and OpenMP wait policy) unless it says
# "--threads 1". What it measures, on the default model (Transformer-VQ, 0.76M parameters,
# trained for 20 steps first) unless said:
#   sample: wall seconds of `sample --max-new-tokens 300 --temperature 0` (best of 3 calls);
#   train:  tokens/s of 60 steps of the default run (mean of its last 4 log lines);
#   serve:  wall seconds for 16 sequential completions of 100 tokens (the server already up),
#           from a tiny GPT-2 (configs/tiny-gpt2.yaml, 20 steps): serve has no VQ decoder.
# Ratios: each loaded row against the same binary with --threads 1 under the same load (>= 1
# means "at least as fast as one thread"), and the new binary's quiet row against the old's.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ge 2 ]; then OLD=$1 NEW=$2; elif [ $# -eq 1 ]; then OLD=$1 NEW=build/meshlm; else
  OLD="" NEW=build/meshlm; fi
OUT=${OUT:-/tmp/busy_machine}
HOGS=${HOGS:-1}
REPS=${REPS:-3}
PORT=${PORT:-18533}
mkdir -p "$OUT"
for b in $OLD $NEW; do [ -x "$b" ] || { echo "busy_machine: no binary at $b" >&2; exit 2; }; done

hogs=()
start_hogs() { for _ in $(seq "$HOGS"); do bash -c 'while :; do :; done' & hogs+=($!); done; }
stop_hogs() { [ ${#hogs[@]} -eq 0 ] || kill "${hogs[@]}" 2>/dev/null || true; hogs=(); }
server=""
stop_server() { [ -z "$server" ] || { kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; } || true; server=""; }
trap 'stop_hogs; stop_server' EXIT

now() { date +%s.%N; }
elapsed() { echo "$(now) - $1" | bc; }

echo "busy_machine: training the models to decode (20 steps each)" >&2
"$NEW" train --force --config.train.steps=20 --config.train.final_eval_batches=1 \
  --config.log.sample_tokens=0 --config.log.dir="$OUT/model" > "$OUT/model.log" 2>&1
"$NEW" train --config configs/tiny-gpt2.yaml --force --config.train.steps=20 \
  --config.train.final_eval_batches=1 --config.log.sample_tokens=0 \
  --config.log.dir="$OUT/gpt2" > "$OUT/gpt2.log" 2>&1

sample_s() {  # BIN THREADS: best of 3 (a call over 30 s is stopped and counts as 30)
  local best=999 t s
  for _ in 1 2 3; do
    s=$(now)
    timeout 30 "$1" sample --checkpoint "$OUT/model" --prompt "Q: What" --max-new-tokens 300 \
      --temperature 0 --threads "$2" > /dev/null 2>&1 || true
    t=$(elapsed "$s")
    best=$(echo "if ($t < $best) $t else $best" | bc)
  done
  printf '%.2f' "$best"
}

train_tps() {  # BIN THREADS
  timeout 300 "$1" train --force --config.train.steps=60 --config.log.interval=10 \
    --config.log.eval_interval=0 --config.train.final_eval_batches=1 --config.log.sample_tokens=0 \
    --config.checkpoint.interval=0 --config.train.threads="$2" --config.log.dir="$OUT/train" \
    > "$OUT/train.log" 2>&1 || true
  grep -o '"tokens_per_s": [0-9.]*' "$OUT/train/metrics.jsonl" 2>/dev/null | tail -4 |
    awk '{s += $2} END {if (NR) printf "%.0f", s / NR; else print "failed"}'
}

serve_s() {  # BIN THREADS
  "$1" serve --checkpoint "$OUT/gpt2" --port "$PORT" --threads "$2" > "$OUT/serve.log" 2>&1 &
  server=$!
  local up=0
  for _ in $(seq 300); do
    curl -sf "http://127.0.0.1:$PORT/health" > /dev/null 2>&1 && { up=1; break; }
    sleep 0.1
  done
  [ $up = 1 ] || { echo "busy_machine: the server did not start:" >&2; cat "$OUT/serve.log" >&2
    exit 1; }
  local s
  s=$(now)
  for _ in $(seq 16); do
    curl -sf --max-time 60 "http://127.0.0.1:$PORT/v1/completions" \
      -H 'Content-Type: application/json' \
      -d '{"prompt": "Q: What", "max_tokens": 100, "temperature": 0, "ignore_eos": true}' \
      > /dev/null || { echo "busy_machine: a completion failed" >&2; exit 1; }
  done
  printf '%.2f' "$(elapsed "$s")"
  stop_server
}

declare -A R  # "LABEL.what" -> the values of every repetition, space-separated
measure() {  # LABEL BIN THREADS
  R[$1.sample]+="$(sample_s "$2" "$3") "
  R[$1.train]+="$(train_tps "$2" "$3") "
  R[$1.serve]+="$(serve_s "$2" "$3") "
}
median() { tr ' ' '\n' <<< "$1" | grep . | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

echo "$(nproc) CPUs, $HOGS hog(s) in the loaded rows, $REPS repetitions (medians);" \
  "$(lscpu | grep 'Model name' | sed 's/.*: *//')"
names=()
[ -n "$OLD" ] && names+=(old)
names+=(new)
# Repetitions go round every row in turn, so that a slow minute of the machine hits all rows.
for rep in $(seq "$REPS"); do
  echo "busy_machine: repetition $rep of $REPS" >&2
  for n in "${names[@]}"; do
    bin=$NEW; [ "$n" = old ] && bin=$OLD
    measure "$n quiet" "$bin" 0
    start_hogs
    measure "$n loaded" "$bin" 0
    measure "$n loaded --threads 1" "$bin" 1
    stop_hogs
  done
done
declare -A M
for n in "${names[@]}"; do
  for row in "$n quiet" "$n loaded" "$n loaded --threads 1"; do
    for w in sample train serve; do M[$row.$w]=$(median "${R[$row.$w]}"); done
    printf '%-26s sample %6ss   train %6s tokens/s   serve %6ss   (train: %s)\n' "$row" \
      "${M[$row.sample]}" "${M[$row.train]}" "${M[$row.serve]}" "${R[$row.train]% }"
  done
done

ratio() { echo "scale=2; $1 / $2" | bc; }
echo "ratios (> 1 is better for the first row named):"
for n in "${names[@]}"; do
  l="$n loaded" t="$n loaded --threads 1"
  echo "  $l vs $t: sample $(ratio "${M[$t.sample]}" "${M[$l.sample]}")x" \
    " train $(ratio "${M[$l.train]}" "${M[$t.train]}")x" \
    " serve $(ratio "${M[$t.serve]}" "${M[$l.serve]}")x"
done
if [ -n "$OLD" ]; then
  echo "  new quiet vs old quiet: sample $(ratio "${M[old quiet.sample]}" "${M[new quiet.sample]}")x" \
    " train $(ratio "${M[new quiet.train]}" "${M[old quiet.train]}")x" \
    " serve $(ratio "${M[old quiet.serve]}" "${M[new quiet.serve]}")x"
fi
