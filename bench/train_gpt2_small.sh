#!/usr/bin/env bash
# End-to-end GPT-2 small (124M) training throughput: meshlm, then the PyTorch peer
# (bench/pytorch_gpt2_train.py), same shapes / batch / threads, in one run. Prints tokens/s,
# GFLOP/s, MFU and peak RSS for each, and the meshlm/PyTorch ratios. See bench/README.md.
# With --arch llama (what bench/train_llama_small.sh runs): SmolLM-135M's Llama shape
# (configs/smollm-135m.yaml) against bench/pytorch_llama_train.py instead.
#
#   bench/train_gpt2_small.sh [--arch gpt2|llama] [--steps 6] [--batch 4] [--seq 256]
#                             [--threads 2] [--skip-meshlm] [--skip-pytorch] [--precision bf16]
#                             [--layers 12] [--width 768] [--heads 12] [--vocab 50257]
#                             [--kv-heads 3] [--ff 1536]   (llama only) [--rounds 1]
#
# --rounds R: the whole measurement R times back to back, meshlm first in odd rounds and PyTorch
#   first in even ones (meshlm, PyTorch, PyTorch, meshlm, ...), then
#   every round's ratios and their median. On a shared VM one round's ratio can move by 20 %
#   (bench/README.md): read the median and the spread, not one round. Each ratio is also given
#   between the two sides' fastest timed steps ("(fastest steps)"), which host noise disturbs
#   least.
# --precision bf16 (gpt2): three runs: meshlm fp32, meshlm with train.precision=bf16 and the
#   PyTorch peer under torch.autocast(bf16) (PyPI PyTorch 2.x: PYTHON defaults to .venv/bin/python
#   and OMP_WAIT_POLICY_TORCH to unset, its fastest there), with the bf16/fp32 and meshlm/PyTorch
#   ratios; bf16 MFUs against the bf16 peak meshlm's start-up probe measures (vdpbf16ps).
# --steps S: each side runs S steps; the first is warmup, the median over the other S-1 counts.
# --layers/--width/--heads/--vocab (and --kv-heads/--ff with llama): a smaller model for a quick
#   check; when given they are also passed to meshlm as --config.model.* overrides (otherwise
#   MESHLM_CONFIG decides, and the FLOP count assumes GPT-2 small / SmolLM-135M).
# Environment:
#   MESHLM_BIN     meshlm binary (default build/meshlm)
#   MESHLM_CONFIG  model config (default configs/gpt2-small.yaml; llama: configs/smollm-135m.yaml)
#   PYTHON         interpreter with torch (default /usr/bin/python3, Debian python3-torch;
#                  llama: .venv/bin/python, PyPI torch 2.x, needed for SDPA's enable_gqa)
#   PEAK_BF16_GFLOPS  the same for the bf16 runs (default: meshlm's "bf16 peak N GFLOP/s")
#   PEAK_GFLOPS    fp32 peak used for MFU on both sides (passed to meshlm as
#                  train.peak_gflops). Default: the peak meshlm measures at start-up (it prints
#                  "fp32 peak N GFLOP/s"), reused for PyTorch so both MFUs share a denominator.
#   OMP_WAIT_POLICY_TORCH  OpenMP wait policy for PyTorch (default PASSIVE; llama: unset) and
#   TORCH_MALLOC   glibc malloc setting for PyTorch (default keep) and
#   TORCH_THP      its huge-page allocation, THP_MEM_ALLOC_ENABLE (default off): PyTorch's
#                  fastest settings here, see bench/README.md and pytorch_gpt2_train.py --help.
#                  meshlm runs under the caller's environment.
#   TORCH_COMPILE=1  llama: torch.compile the PyTorch model (default off, see bench/README.md)
#   OUT_DIR        where run directories and logs go (default bench/out, git-ignored)
#   KEEP_CHECKPOINT=1  keep meshlm's final model.safetensors (deleted by default)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
MESHLM_BIN="${MESHLM_BIN:-$ROOT/build/meshlm}"
OUT_DIR="${OUT_DIR:-$ROOT/bench/out}"
TORCH_MALLOC="${TORCH_MALLOC:-keep}"
TORCH_THP="${TORCH_THP:-off}"
ARCH=gpt2
STEPS=6
BATCH=4
SEQ=256
THREADS=2
RUN_MESHLM=1
RUN_TORCH=1
PRECISION=fp32
# Model dimensions for the FLOP count and the PyTorch peer (must match MESHLM_CONFIG); empty:
# the architecture's default (GPT-2 small / SmolLM-135M), set below.
LAYERS=""
WIDTH=""
HEADS=""
VOCAB=""
KV_HEADS=""
FF=""
MODEL_OVERRIDES=()
ROUNDS=1
FORWARD_ARGS=()  # what each round is given: everything but --rounds

while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) ;;
    --skip-meshlm|--skip-pytorch|-h|--help) FORWARD_ARGS+=("$1") ;;
    *) FORWARD_ARGS+=("$1" "${2:-}") ;;
  esac
  case "$1" in
    --rounds) ROUNDS="$2"; shift 2 ;;
    --arch) ARCH="$2"; shift 2 ;;
    --kv-heads) KV_HEADS="$2"; MODEL_OVERRIDES+=(--config.model.n_kv_head="$2"); shift 2 ;;
    --ff) FF="$2"; MODEL_OVERRIDES+=(--config.model.d_ff="$2"); shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --batch) BATCH="$2"; shift 2 ;;
    --seq) SEQ="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --layers) LAYERS="$2"; MODEL_OVERRIDES+=(--config.model.n_layer="$2"); shift 2 ;;
    --width) WIDTH="$2"; MODEL_OVERRIDES+=(--config.model.d_model="$2"); shift 2 ;;
    --heads) HEADS="$2"; MODEL_OVERRIDES+=(--config.model.n_head="$2"); shift 2 ;;
    --vocab) VOCAB="$2"; MODEL_OVERRIDES+=(--config.model.vocab_size="$2"); shift 2 ;;
    --skip-meshlm) RUN_MESHLM=0; shift ;;
    --skip-pytorch) RUN_TORCH=0; shift ;;
    --precision) PRECISION="$2"; shift 2 ;;
    -h|--help) sed -n '2,39p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
if ! [[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]]; then
  echo "--rounds must be a positive integer, got '$ROUNDS'" >&2; exit 2
fi
if (( ROUNDS > 1 )); then
  LOGS=()
  for ((r = 1; r <= ROUNDS; r++)); do
    echo "== round $r of $ROUNDS" >&2
    LOG="$(mktemp)"
    BENCH_PEER_FIRST=$(( r % 2 == 0 )) "$0" "${FORWARD_ARGS[@]}" | tee "$LOG"
    LOGS+=("$LOG")
  done
  echo
  echo "== $ROUNDS rounds"
  python3 - "${LOGS[@]}" <<'ROUNDS_EOF'
import re, statistics, sys
ratios = {}
for r, path in enumerate(sys.argv[1:], 1):
    for line in open(path):
        m = re.match(r"(\S.* / \S.*): tokens/s ([0-9.]+)x(?:, peak RSS ([0-9.]+)x)?", line)
        if m:
            ratios.setdefault(m.group(1), []).append((float(m.group(2)), m.group(3)))
        if line.startswith("NOTE: other processes"):
            print(f"round {r}: {line.strip()}")
for label, rs in ratios.items():
    tps = [x for x, _ in rs]
    rss = [float(y) for _, y in rs if y]
    line = (f"{label}: tokens/s median {statistics.median(tps):.2f}x over {len(tps)} rounds "
            f"(min {min(tps):.2f}x, max {max(tps):.2f}x; each: "
            + ", ".join(f"{x:.2f}x" for x in tps) + ")")
    if rss:
        line += f", peak RSS median {statistics.median(rss):.2f}x"
    print(line)
ROUNDS_EOF
  rm -f "${LOGS[@]}"
  exit 0
fi
if (( STEPS < 2 )); then echo "--steps must be >= 2 (the first step is warmup)" >&2; exit 2; fi
case "$PRECISION" in
  fp32) ;;
  bf16) [[ "$ARCH" == gpt2 ]] || { echo "--precision bf16 needs --arch gpt2" >&2; exit 2; } ;;
  *) echo "--precision must be fp32 or bf16" >&2; exit 2 ;;
esac
case "$ARCH" in
  gpt2)
    MESHLM_CONFIG="${MESHLM_CONFIG:-$ROOT/configs/gpt2-small.yaml}"
    if [[ "$PRECISION" == bf16 ]]; then
      PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
      TORCH_WAIT="${OMP_WAIT_POLICY_TORCH:-unset}"
    else
      PYTHON="${PYTHON:-/usr/bin/python3}"
      TORCH_WAIT="${OMP_WAIT_POLICY_TORCH:-PASSIVE}"
    fi
    PEER="$ROOT/bench/pytorch_gpt2_train.py"
    RUN_NAME=train_gpt2_small
    : "${LAYERS:=12}" "${WIDTH:=768}" "${HEADS:=12}" "${VOCAB:=50257}"
    if [[ -n "$KV_HEADS$FF" ]]; then echo "--kv-heads/--ff need --arch llama" >&2; exit 2; fi
    KV_HEADS="$HEADS"; FF=$((4 * WIDTH)) ;;
  llama)
    MESHLM_CONFIG="${MESHLM_CONFIG:-$ROOT/configs/smollm-135m.yaml}"
    PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
    TORCH_WAIT="${OMP_WAIT_POLICY_TORCH:-unset}"
    PEER="$ROOT/bench/pytorch_llama_train.py"
    RUN_NAME=train_llama_small
    : "${LAYERS:=30}" "${WIDTH:=576}" "${HEADS:=9}" "${VOCAB:=49152}" "${KV_HEADS:=3}" "${FF:=1536}" ;;
  *) echo "--arch must be gpt2 or llama" >&2; exit 2 ;;
esac

SUMMARY_PY="$(command -v python3 || true)"
[[ -z "$SUMMARY_PY" && -x "$PYTHON" ]] && SUMMARY_PY="$PYTHON"
if [[ -z "$SUMMARY_PY" ]]; then echo "python3 is needed to read the results" >&2; exit 1; fi

mkdir -p "$OUT_DIR"
RUN="$(mktemp -d "$OUT_DIR/$RUN_NAME.XXXXXX")"
echo "== results in $RUN" >&2

TIME_BIN=""
if [[ -x /usr/bin/time ]]; then TIME_BIN=/usr/bin/time; else
  echo "== /usr/bin/time not found (apt-get install time): meshlm peak RSS will be n/a" >&2
fi

# Busy CPU time of the whole machine in seconds (user+nice+system+irq+softirq), to tell how much
# CPU other processes took during a run: that minus the run's own user+sys time.
busy_s() { awk -v hz="$(getconf CLK_TCK)" '/^cpu /{printf "%.2f\n", ($2+$3+$4+$7+$8)/hz}' /proc/stat; }
# run_measured NAME CMD...: runs CMD under /usr/bin/time (if present), writes NAME.time
# ("maxrss_kib wall_s user_s sys_s") and NAME.busy ("busy_before busy_after").
run_measured() {
  local name="$1"; shift
  local b0; b0="$(busy_s)"
  local rc=0
  if [[ -n "$TIME_BIN" ]]; then
    "$TIME_BIN" -f "%M %e %U %S" -o "$RUN/$name.time" "$@" || rc=$?
  else
    "$@" || rc=$?
  fi
  echo "$b0 $(busy_s)" >"$RUN/$name.busy"
  return $rc
}

# ---------------------------------------------------------------- meshlm
# run_meshlm NAME PRECISION: one meshlm run into $RUN/NAME (log NAME.log, time NAME.time).
MESHLM_RUNS=()
run_meshlm() {
  local name="$1" prec="$2"
  local cmd=("$MESHLM_BIN" train --config "$MESHLM_CONFIG"
       --config.data.synthetic=true --config.train.steps="$STEPS"
       --config.train.batch_size="$BATCH" --config.train.seq_len="$SEQ"
       --config.train.threads="$THREADS" --config.log.interval=1
       --config.log.eval_interval=0 --config.log.sample_tokens=0
       --config.checkpoint.interval=0 --config.log.dir="$RUN/$name"
       --config.train.precision="$prec" "${MODEL_OVERRIDES[@]}")
  if [[ "$prec" == fp32 && -n "${PEAK_GFLOPS:-}" ]]; then
    cmd+=(--config.train.peak_gflops="$PEAK_GFLOPS")
  elif [[ "$prec" == bf16 && -n "${PEAK_BF16_GFLOPS:-}" ]]; then
    cmd+=(--config.train.peak_gflops="$PEAK_BF16_GFLOPS")
  fi
  echo "== $name: ${cmd[*]}" >&2
  if run_measured "$name" "${cmd[@]}" 2>&1 | tee "$RUN/$name.log" >&2; then
    MESHLM_RUNS+=("$name")
  else
    echo "== $name failed (exit ${PIPESTATUS[0]}), see $RUN/$name.log" >&2
  fi
}
meshlm_side() {
  (( RUN_MESHLM )) || return 0
  if [[ ! -x "$MESHLM_BIN" ]]; then
    echo "== meshlm: $MESHLM_BIN not found (build it: cmake --build build), skipped" >&2
  elif [[ ! -f "$MESHLM_CONFIG" ]]; then
    echo "== meshlm: $MESHLM_CONFIG not found, skipped" >&2
  elif [[ "$PRECISION" == bf16 ]]; then
    run_meshlm meshlm-fp32 fp32
    run_meshlm meshlm-bf16 bf16
  else
    run_meshlm meshlm fp32
  fi
  # meshlm saves a checkpoint at the end of training: not needed here (475 MiB for GPT-2 small).
  if [[ "${KEEP_CHECKPOINT:-0}" != 1 ]]; then rm -f "$RUN"/meshlm*/*.safetensors; fi
}

# ---------------------------------------------------------------- PyTorch
TORCH_OK=0
torch_side() {
  (( RUN_TORCH )) || return 0
  if [[ ! -x "$PYTHON" ]] || ! "$PYTHON" -c "import torch" >/dev/null 2>&1; then
    echo "== pytorch: $PYTHON cannot import torch, skipped (apt-get install python3-torch;" \
         "llama: a venv with PyPI torch at .venv, or PYTHON=...)" >&2
  else
    tcmd=("$PYTHON" "$PEER" --warmup 1 --steps $((STEPS - 1))
          --batch "$BATCH" --seq "$SEQ" --threads "$THREADS" --layers "$LAYERS"
          --width "$WIDTH" --heads "$HEADS" --vocab "$VOCAB" --omp-wait-policy "$TORCH_WAIT"
          --malloc "$TORCH_MALLOC" --thp "$TORCH_THP")
    if [[ "$ARCH" == gpt2 ]]; then tcmd+=(--precision "$PRECISION"); fi
    if [[ "$ARCH" == llama ]]; then
      tcmd+=(--kv-heads "$KV_HEADS" --ff "$FF")
      [[ "${TORCH_COMPILE:-0}" == 1 ]] && tcmd+=(--compile)
    fi
    echo "== pytorch: ${tcmd[*]}" >&2
    if run_measured pytorch "${tcmd[@]}" >"$RUN/pytorch.json" 2> >(tee "$RUN/pytorch.log" >&2); then
      TORCH_OK=1
    else
      echo "== pytorch failed, see $RUN/pytorch.log" >&2
    fi
  fi
}

# In --rounds, every second round runs PyTorch first, so neither side always gets the same
# place in the host's slow and quiet stretches.
if [[ "${BENCH_PEER_FIRST:-0}" == 1 ]]; then
  echo "== this round runs PyTorch first" >&2
  torch_side
  meshlm_side
else
  meshlm_side
  torch_side
fi

# ---------------------------------------------------------------- summary
"$SUMMARY_PY" - "$RUN" "${MESHLM_RUNS[*]:-}" "$TORCH_OK" "$BATCH" "$SEQ" "$THREADS" "$STEPS" \
  "$LAYERS" "$WIDTH" "$VOCAB" "${PEAK_GFLOPS:-}" "$ARCH" "$HEADS" "$KV_HEADS" "$FF" \
  "$PRECISION" "${PEAK_BF16_GFLOPS:-}" <<'EOF'
import json, os, re, statistics, sys

run, meshlm_runs, t_ok = sys.argv[1], sys.argv[2].split(), sys.argv[3] == "1"
B, T, threads, steps, L, d, V = map(int, sys.argv[4:11])
peak_env, arch = sys.argv[11], sys.argv[12]
H, KV, F = map(int, sys.argv[13:16])
precision, peak_bf16_env = sys.argv[16], sys.argv[17]
if arch == "llama":  # q, o: d x d; k, v: d x kv; SwiGLU: 3 d F; two RMSNorms a block + the final
    n_nonembed = L * (2 * d * d + 2 * d * KV * (d // H) + 3 * d * F + 2 * d) + d
else:
    n_nonembed = 12 * L * d * d + 13 * L * d + 2 * d
fpt = 6 * n_nonembed + 6 * V * d + 12 * L * T * d

def measured(name):
    """(maxrss MiB, foreign load) from NAME.time / NAME.busy; None where unknown. Foreign load:
    CPU seconds other processes used during the run / its wall time (0 = machine was ours)."""
    rss = load = None
    try:
        kib, wall, user, sys_ = open(os.path.join(run, name + ".time")).read().split()[-4:]
        rss = int(kib) / 1024.0
        b0, b1 = map(float, open(os.path.join(run, name + ".busy")).read().split())
        load = max(0.0, (b1 - b0) - float(user) - float(sys_)) / float(wall)
    except (OSError, ValueError):
        pass
    return rss, load

# Peaks per precision: the environment's, else what meshlm's start-up probe printed.
peaks = {}
if peak_env:
    peaks["fp32"] = (float(peak_env), "PEAK_GFLOPS")
if peak_bf16_env:
    peaks["bf16"] = (float(peak_bf16_env), "PEAK_BF16_GFLOPS")

rows = {}
for name in meshlm_runs:
    prec = "bf16" if name.endswith("bf16") else "fp32"
    path = os.path.join(run, name, "metrics.jsonl")
    recs = [json.loads(l) for l in open(path) if l.strip()] if os.path.exists(path) else []
    timed = [r for r in recs if "tokens_per_s" in r][1:]  # the first logged step is warmup
    if not timed:
        print(f"{name}: no step metrics in {path}", file=sys.stderr)
        continue
    mfus = [r["mfu"] for r in timed if r.get("mfu") is not None]
    rss, load = measured(name)
    rows[name] = dict(tps=statistics.median(r["tokens_per_s"] for r in timed), rss=rss,
                      best=max(r["tokens_per_s"] for r in timed),
                      self_mfu=statistics.median(mfus) if mfus else None, n=len(timed),
                      load=load, prec=prec)
    if prec not in peaks:
        m = re.search(prec + r" peak (\d+(?:\.\d+)?) GFLOP/s", open(os.path.join(run, name + ".log")).read())
        if m:
            peaks[prec] = (float(m.group(1)), "measured by meshlm at start-up")

if t_ok:
    lines = [l for l in open(os.path.join(run, "pytorch.json")) if l.strip().startswith("{")]
    j = json.loads(lines[-1])
    _, load = measured("pytorch")
    name = "pytorch-bf16" if precision == "bf16" else "pytorch"
    rows[name] = dict(tps=j["tokens_per_s"], rss=j["peak_rss_mib"], self_mfu=None,
                      best=B * T / min(j["step_s"]) if j.get("step_s") else None,
                      n=len(j.get("step_s", [])), torch=j["torch"], load=load,
                      wait=j.get("omp_wait_policy"), prec=precision,
                      malloc="keep" if j.get("glibc_tunables") else "glibc default",
                      thp=j.get("thp_alloc"),
                      compile=j.get("compile"), mkl_amd=j.get("mkl_amd"),
                      fused=j.get("fused_adamw"))

if "fp32" not in peaks:
    # Last resort: nominal clock x 2 FMA units x lanes (16 with AVX-512, else 8) x 2 x threads.
    try:
        cpuinfo = open("/proc/cpuinfo").read()
        mhz0 = float(re.search(r"cpu MHz\s*:\s*([0-9.]+)", cpuinfo).group(1))
        lanes = 16 if re.search(r"\bavx512f\b", cpuinfo) else 8
        peaks["fp32"] = (threads * mhz0 * 2 * lanes * 2 / 1000.0,
                         f"nominal estimate: {threads} x {mhz0:.0f} MHz x {4 * lanes} FLOP/cycle")
    except (OSError, AttributeError, ValueError):
        pass

# Sanity bound: 2 AVX-512 FMA units (64 FLOP/cycle) at twice the nominal clock, per thread.
try:
    mhz = next(float(l.split(":")[1]) for l in open("/proc/cpuinfo") if l.startswith("cpu MHz"))
except (OSError, StopIteration, ValueError):
    mhz = None
fp32_peak = peaks.get("fp32", (None, None))[0]
if fp32_peak and mhz and fp32_peak > threads * mhz * 64 * 2 / 1000.0:
    print(f"WARNING: peak {fp32_peak:.0f} GFLOP/s ({peaks['fp32'][1]}) is above anything "
          f"{threads} cores at {mhz:.0f} MHz can do ({threads * mhz * 64 * 2 / 1000.0:.0f} = 2 x "
          f"AVX-512 FMA peak); the MFU column is too low. Set PEAK_GFLOPS.", file=sys.stderr)

if not rows:
    print("nothing ran")
    sys.exit(1)

shape = (f"{L} layers, width {d}, {H} heads ({KV} key/value), SwiGLU {F}, vocab {V}"
         if arch == "llama" else f"{L} layers, width {d}, vocab {V}")
precs = "fp32 and bf16" if precision == "bf16" else "fp32"
print(f"\n== {'Llama' if arch == 'llama' else 'GPT'} training ({shape}), {precs}, batch {B} x seq {T}, "
      f"{threads} threads, {steps} steps (first = warmup, median of the rest)")
print(f"   FLOPs/token {fpt / 1e6:.1f} M (6 N_nonembed + 6 V d + 12 L T d)")
for prec, (pk, src) in peaks.items():
    print(f"   {prec} MFU against {pk:.0f} GFLOP/s ({src})")
print(f"{'impl':<14}{'tokens/s':>10}{'step s':>9}{'GFLOP/s':>9}{'MFU':>8}{'peak RSS MiB':>14}"
      f"{'other load':>11}  notes")
for name, r in rows.items():
    g = r["tps"] * fpt / 1e9
    pk = peaks.get(r["prec"], (None, None))[0]
    mfu = f"{100 * g / pk:.1f}%" if pk else "n/a"
    rss = f"{r['rss']:.0f}" if r["rss"] is not None else "n/a"
    load = f"{r['load']:.2f}" if r.get("load") is not None else "n/a"
    notes = f"{r['n']} timed steps"
    if r.get("self_mfu") is not None:
        notes += f"; meshlm's own MFU {100 * r['self_mfu']:.1f}%"
    if name.startswith("pytorch"):
        notes += f"; torch {r['torch']}, OMP_WAIT_POLICY={r['wait'] or 'unset'}, malloc {r['malloc']}"
        if r.get("thp"):
            notes += ", THP_MEM_ALLOC_ENABLE=1"
        if r.get("fused"):
            notes += ", fused AdamW"
        if r.get("compile"):
            notes += ", torch.compile"
        if r.get("mkl_amd") == "avx2":
            notes += ", MKL AVX2 on AMD"
    print(f"{name:<14}{r['tps']:>10.1f}{B * T / r['tps']:>9.2f}{g:>9.1f}{mfu:>8}{rss:>14}"
          f"{load:>11}  {notes}")
busy = [n for n, r in rows.items() if (r.get("load") or 0) > 0.1]
if busy:
    what = ", ".join("%s %.2f" % (n, rows[n]["load"]) for n in busy)
    print(f"NOTE: other processes kept cores busy during the run ({what} cores on average): "
          f"these numbers are not clean, rerun on a quiet machine")

def ratio(a, b, label):
    if a in rows and b in rows:
        x, y = rows[a], rows[b]
        line = f"{label}: tokens/s {x['tps'] / y['tps']:.2f}x"
        if x["rss"] and y["rss"]:
            line += f", peak RSS {x['rss'] / y['rss']:.2f}x"
        print(line)
        # Host noise only ever slows a step: the fastest steps compare the two programs with
        # the least of it (the median above is the headline).
        if x.get("best") and y.get("best"):
            print(f"{label} (fastest steps): tokens/s {x['best'] / y['best']:.2f}x "
                  f"({x['best']:.1f} / {y['best']:.1f})")

ratio("meshlm", "pytorch", "meshlm / pytorch")
ratio("meshlm-bf16", "meshlm-fp32", "meshlm bf16 / meshlm fp32")
ratio("meshlm-bf16", "pytorch-bf16", "meshlm bf16 / pytorch bf16")
EOF
