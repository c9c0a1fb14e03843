# Sourced by bench/profile_step.sh and bench/omp_regions.sh: their shared options and the
# `meshlm train` run on synthetic tokens they observe. The caller sets PRECISION (its default)
# and HELP_LINES (the sed range of its usage comment) before sourcing, then calls
# parse_step_args "$@", new_run_dir NAME, start_step_run [VAR=value ...] and wait_step N.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MESHLM_BIN="${MESHLM_BIN:-$ROOT/build/meshlm}"
MESHLM_CONFIG="${MESHLM_CONFIG:-$ROOT/configs/gpt2-small.yaml}"
OUT_DIR="${OUT_DIR:-$ROOT/bench/out}"
STEPS=8
BATCH=4
SEQ=256
THREADS=2
EXTRA=()

parse_step_args() {
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --precision) PRECISION="$2"; shift 2 ;;
      --steps) STEPS="$2"; shift 2 ;;
      --batch) BATCH="$2"; shift 2 ;;
      --seq) SEQ="$2"; shift 2 ;;
      --threads) THREADS="$2"; shift 2 ;;
      --) shift; EXTRA=("$@"); break ;;
      -h|--help) sed -n "$HELP_LINES" "$0"; exit 0 ;;
      *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
  done
  if (( STEPS < 4 )); then echo "--steps must be >= 4 (two warmup steps, then measured ones)" >&2; exit 2; fi
  [[ -x "$MESHLM_BIN" ]] || { echo "$MESHLM_BIN not found: build it first" >&2; exit 1; }
}

# A new $OUT_DIR/NAME.XXXXXX for the results: sets RUN.
new_run_dir() {
  mkdir -p "$OUT_DIR"
  RUN="$(mktemp -d "$OUT_DIR/$1.XXXXXX")"
  echo "== results in $RUN" >&2
}

# Starts the run in the background, logging to $RUN/meshlm.log, with the environment assignments
# given; sets PID.
start_step_run() {
  env "$@" "$MESHLM_BIN" train --config "$MESHLM_CONFIG" --config.data.synthetic=true \
    --config.train.steps="$STEPS" --config.train.batch_size="$BATCH" \
    --config.train.seq_len="$SEQ" --config.train.threads="$THREADS" \
    --config.train.precision="$PRECISION" --config.log.interval=1 --config.log.eval_interval=0 \
    --config.log.sample_tokens=0 --config.checkpoint.interval=0 --config.log.dir="$RUN/run" \
    "${EXTRA[@]}" >"$RUN/meshlm.log" 2>&1 &
  PID=$!
}

# Waits until step N is logged; returns 1 if meshlm ended first.
wait_step() {
  until grep -q "^step  *$1/" "$RUN/meshlm.log" 2>/dev/null; do
    kill -0 "$PID" 2>/dev/null || return 1
    sleep 0.02
  done
}
