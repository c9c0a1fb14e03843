#!/usr/bin/env bash
# End-to-end GPT-2 small (124M) training throughput: meshlm, then the PyTorch peer
# (bench/pytorch_gpt2_train.py), same shapes / batch / threads, in one run. Prints tokens/s,
# GFLOP/s, MFU and peak RSS for each, and the meshlm/PyTorch ratios. See bench/README.md.
# With --arch llama (what bench/train_llama_small.sh runs): SmolLM-135M's Llama shape
# (configs/smollm-135m.yaml) against bench/pytorch_llama_train.py instead.
#
#   bench/train_gpt2_small.sh [--arch gpt2|llama] [--steps 6] [--batch 4] [--seq 256]
#                             [--threads 2] [--skip-meshlm] [--skip-pytorch]
#                             [--layers 12] [--width 768] [--heads 12] [--vocab 50257]
#                             [--kv-heads 3] [--ff 1536]   (llama only)
#
# --steps S: each side runs S steps; the first is warmup, the median over the other S-1 counts.
# --layers/--width/--heads/--vocab (and --kv-heads/--ff with llama): a smaller model for a quick
#   check; when given they are also passed to meshlm as --config.model.* overrides (otherwise
#   MESHLM_CONFIG decides, and the FLOP count assumes GPT-2 small / SmolLM-135M).
# Environment:
#   MESHLM_BIN     meshlm binary (default build/meshlm)
#   MESHLM_CONFIG  model config (default configs/gpt2-small.yaml; llama: configs/smollm-135m.yaml)
#   PYTHON         interpreter with torch (default /usr/bin/python3, Debian python3-torch;
#                  llama: .venv/bin/python, PyPI torch 2.x, needed for SDPA's enable_gqa)
#   PEAK_GFLOPS    fp32 peak used for MFU on both sides (passed to meshlm as
#                  train.peak_gflops). Default: the peak meshlm measures at start-up (it prints
#                  "fp32 peak N GFLOP/s"), reused for PyTorch so both MFUs share a denominator.
#   OMP_WAIT_POLICY_TORCH  OpenMP wait policy for PyTorch (default PASSIVE; llama: unset) and
#   TORCH_MALLOC   glibc malloc setting for PyTorch (default keep): PyTorch's fastest settings
#                  here, see bench/README.md and pytorch_gpt2_train.py --help. meshlm runs under
#                  the caller's environment.
#   TORCH_COMPILE=1  llama: torch.compile the PyTorch model (default off, see bench/README.md)
#   OUT_DIR        where run directories and logs go (default bench/out, git-ignored)
#   KEEP_CHECKPOINT=1  keep meshlm's final model.safetensors (deleted by default)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
MESHLM_BIN="${MESHLM_BIN:-$ROOT/build/meshlm}"
OUT_DIR="${OUT_DIR:-$ROOT/bench/out}"
TORCH_MALLOC="${TORCH_MALLOC:-keep}"
ARCH=gpt2
STEPS=6
BATCH=4
SEQ=256
THREADS=2
RUN_MESHLM=1
RUN_TORCH=1
# Model dimensions for the FLOP count and the PyTorch peer (must match MESHLM_CONFIG); empty:
# the architecture's default (GPT-2 small / SmolLM-135M), set below.
LAYERS=""
WIDTH=""
HEADS=""
VOCAB=""
KV_HEADS=""
FF=""
MODEL_OVERRIDES=()

while [[ $# -gt 0 ]]; do
  case "$1" in
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
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
if (( STEPS < 2 )); then echo "--steps must be >= 2 (the first step is warmup)" >&2; exit 2; fi
case "$ARCH" in
  gpt2)
    MESHLM_CONFIG="${MESHLM_CONFIG:-$ROOT/configs/gpt2-small.yaml}"
    PYTHON="${PYTHON:-/usr/bin/python3}"
    TORCH_WAIT="${OMP_WAIT_POLICY_TORCH:-PASSIVE}"
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
MESHLM_OK=0
if (( RUN_MESHLM )); then
  if [[ ! -x "$MESHLM_BIN" ]]; then
    echo "== meshlm: $MESHLM_BIN not found (build it: cmake --build build), skipped" >&2
  elif [[ ! -f "$MESHLM_CONFIG" ]]; then
    echo "== meshlm: $MESHLM_CONFIG not found, skipped" >&2
  else
    cmd=("$MESHLM_BIN" train --config "$MESHLM_CONFIG"
         --config.data.synthetic=true --config.train.steps="$STEPS"
         --config.train.batch_size="$BATCH" --config.train.seq_len="$SEQ"
         --config.train.threads="$THREADS" --config.log.interval=1
         --config.log.eval_interval=0 --config.log.sample_tokens=0
         --config.checkpoint.interval=0 --config.log.dir="$RUN/meshlm" "${MODEL_OVERRIDES[@]}")
    [[ -n "${PEAK_GFLOPS:-}" ]] && cmd+=(--config.train.peak_gflops="$PEAK_GFLOPS")
    echo "== meshlm: ${cmd[*]}" >&2
    if run_measured meshlm "${cmd[@]}" 2>&1 | tee "$RUN/meshlm.log" >&2; then
      MESHLM_OK=1
    else
      echo "== meshlm failed (exit ${PIPESTATUS[0]}), see $RUN/meshlm.log" >&2
    fi
  fi
fi

# meshlm saves a checkpoint at the end of training: not needed here (475 MiB for GPT-2 small).
if [[ "${KEEP_CHECKPOINT:-0}" != 1 ]]; then rm -f "$RUN"/meshlm/*.safetensors; fi

# ---------------------------------------------------------------- PyTorch
TORCH_OK=0
if (( RUN_TORCH )); then
  if [[ ! -x "$PYTHON" ]] || ! "$PYTHON" -c "import torch" >/dev/null 2>&1; then
    echo "== pytorch: $PYTHON cannot import torch, skipped (apt-get install python3-torch;" \
         "llama: a venv with PyPI torch at .venv, or PYTHON=...)" >&2
  else
    tcmd=("$PYTHON" "$PEER" --warmup 1 --steps $((STEPS - 1))
          --batch "$BATCH" --seq "$SEQ" --threads "$THREADS" --layers "$LAYERS"
          --width "$WIDTH" --heads "$HEADS" --vocab "$VOCAB" --omp-wait-policy "$TORCH_WAIT"
          --malloc "$TORCH_MALLOC")
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
fi

# ---------------------------------------------------------------- summary
"$SUMMARY_PY" - "$RUN" "$MESHLM_OK" "$TORCH_OK" "$BATCH" "$SEQ" "$THREADS" "$STEPS" \
  "$LAYERS" "$WIDTH" "$VOCAB" "${PEAK_GFLOPS:-}" "$ARCH" "$HEADS" "$KV_HEADS" "$FF" <<'EOF'
import json, os, re, statistics, sys

run, m_ok, t_ok = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
B, T, threads, steps, L, d, V = map(int, sys.argv[4:11])
peak_env, arch = sys.argv[11], sys.argv[12]
H, KV, F = map(int, sys.argv[13:16])
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

rows = {}
peak, peak_src = None, None
if peak_env:
    peak, peak_src = float(peak_env), "PEAK_GFLOPS"

if m_ok:
    recs = []
    path = os.path.join(run, "meshlm", "metrics.jsonl")
    if os.path.exists(path):
        recs = [json.loads(l) for l in open(path) if l.strip()]
    recs = [r for r in recs if "tokens_per_s" in r]
    timed = recs[1:]  # the first logged step is warmup
    if timed:
        tps = statistics.median(r["tokens_per_s"] for r in timed)
        mfus = [r["mfu"] for r in timed if r.get("mfu") is not None]
        rss, load = measured("meshlm")
        rows["meshlm"] = dict(tps=tps, rss=rss, self_mfu=statistics.median(mfus) if mfus else None,
                              n=len(timed), load=load)
        if peak is None:
            log = open(os.path.join(run, "meshlm.log")).read()
            m = re.search(r"fp32 peak (\d+(?:\.\d+)?) GFLOP/s", log)
            if m:
                peak, peak_src = float(m.group(1)), "measured by meshlm at start-up"
    else:
        print(f"meshlm: no step metrics in {path}", file=sys.stderr)

if t_ok:
    lines = [l for l in open(os.path.join(run, "pytorch.json")) if l.strip().startswith("{")]
    j = json.loads(lines[-1])
    _, load = measured("pytorch")
    rows["pytorch"] = dict(tps=j["tokens_per_s"], rss=j["peak_rss_mib"], self_mfu=None,
                           n=len(j.get("step_s", [])), torch=j["torch"], load=load,
                           wait=j.get("omp_wait_policy"),
                           malloc="keep" if j.get("glibc_tunables") else "glibc default",
                           compile=j.get("compile"), mkl_amd=j.get("mkl_amd"))

if peak is None:
    # Last resort: nominal clock x 2 FMA units x lanes (16 with AVX-512, else 8) x 2 x threads.
    try:
        cpuinfo = open("/proc/cpuinfo").read()
        mhz0 = float(re.search(r"cpu MHz\s*:\s*([0-9.]+)", cpuinfo).group(1))
        lanes = 16 if re.search(r"\bavx512f\b", cpuinfo) else 8
        peak = threads * mhz0 * 2 * lanes * 2 / 1000.0
        peak_src = f"nominal estimate: {threads} x {mhz0:.0f} MHz x {4 * lanes} FLOP/cycle"
    except (OSError, AttributeError, ValueError):
        pass

# Sanity bound: 2 AVX-512 FMA units (64 FLOP/cycle) at twice the nominal clock, per thread.
try:
    mhz = next(float(l.split(":")[1]) for l in open("/proc/cpuinfo") if l.startswith("cpu MHz"))
except (OSError, StopIteration, ValueError):
    mhz = None
if peak and mhz and peak > threads * mhz * 64 * 2 / 1000.0:
    print(f"WARNING: peak {peak:.0f} GFLOP/s ({peak_src}) is above anything {threads} cores at "
          f"{mhz:.0f} MHz can do ({threads * mhz * 64 * 2 / 1000.0:.0f} = 2 x AVX-512 FMA peak); "
          f"the MFU column is too low. Set PEAK_GFLOPS.", file=sys.stderr)

if not rows:
    print("nothing ran")
    sys.exit(1)

shape = (f"{L} layers, width {d}, {H} heads ({KV} key/value), SwiGLU {F}, vocab {V}"
         if arch == "llama" else f"{L} layers, width {d}, vocab {V}")
print(f"\n== {'Llama' if arch == 'llama' else 'GPT'} training ({shape}), fp32, batch {B} x seq {T}, {threads} threads, "
      f"{steps} steps (first = warmup, median of the rest)")
print(f"   FLOPs/token {fpt / 1e6:.1f} M (6 N_nonembed + 6 V d + 12 L T d); "
      f"MFU against {peak:.0f} GFLOP/s ({peak_src})" if peak else
      f"   FLOPs/token {fpt / 1e6:.1f} M; MFU n/a (no peak)")
print(f"{'impl':<10}{'tokens/s':>10}{'step s':>9}{'GFLOP/s':>9}{'MFU':>8}{'peak RSS MiB':>14}"
      f"{'other load':>11}  notes")
for name, r in rows.items():
    g = r["tps"] * fpt / 1e9
    mfu = f"{100 * g / peak:.1f}%" if peak else "n/a"
    rss = f"{r['rss']:.0f}" if r["rss"] is not None else "n/a"
    load = f"{r['load']:.2f}" if r.get("load") is not None else "n/a"
    notes = f"{r['n']} timed steps"
    if r.get("self_mfu") is not None:
        notes += f"; meshlm's own MFU {100 * r['self_mfu']:.1f}%"
    if name == "pytorch":
        notes += f"; torch {r['torch']}, OMP_WAIT_POLICY={r['wait'] or 'unset'}, malloc {r['malloc']}"
        if r.get("compile"):
            notes += ", torch.compile"
        if r.get("mkl_amd") == "avx2":
            notes += ", MKL AVX2 on AMD"
    print(f"{name:<10}{r['tps']:>10.1f}{B * T / r['tps']:>9.2f}{g:>9.1f}{mfu:>8}{rss:>14}"
          f"{load:>11}  {notes}")
busy = [n for n, r in rows.items() if (r.get("load") or 0) > 0.1]
if busy:
    what = ", ".join("%s %.2f" % (n, rows[n]["load"]) for n in busy)
    print(f"NOTE: other processes kept cores busy during the run ({what} cores on average): "
          f"these numbers are not clean, rerun on a quiet machine")
if "meshlm" in rows and "pytorch" in rows:
    m, p = rows["meshlm"], rows["pytorch"]
    line = f"meshlm / pytorch: tokens/s {m['tps'] / p['tps']:.2f}x"
    if m["rss"] and p["rss"]:
        line += f", peak RSS {m['rss'] / p['rss']:.2f}x"
    print(line)
EOF
