#!/usr/bin/env bash
# Where a training step's time goes, per kernel: runs meshlm on GPT-2 small (synthetic tokens,
# the shapes of bench/train_gpt2_small.sh), lets the first two steps pass (warmup: oneDNN builds
# its kernels, the bf16/fp32 peak probe runs), then samples the process with `perf record` until
# the last step is logged, and prints each kernel's share of the samples and of one step's time.
# oneDNN's JIT-generated GEMM code has no symbols: its samples are summed as one row.
#
#   bench/profile_step.sh [--precision bf16|fp32] [--steps 8] [--batch 4] [--seq 256]
#                         [--threads 2] [-- extra meshlm train flags]
#
# Needs `perf` (apt-get install linux-perf) and permission to attach (root, or
# kernel.perf_event_paranoid <= 1). Environment: MESHLM_BIN (default build/meshlm),
# MESHLM_CONFIG (default configs/gpt2-small.yaml), OUT_DIR (default bench/out).
set -euo pipefail

PRECISION=bf16
HELP_LINES='2,14p'
source "$(dirname "${BASH_SOURCE[0]}")/step_run.sh"
parse_step_args "$@"
command -v perf >/dev/null || { echo "perf not found (apt-get install linux-perf)" >&2; exit 1; }

new_run_dir profile_step
start_step_run
wait_step 2 || { cat "$RUN/meshlm.log" >&2; echo "meshlm ended early" >&2; exit 1; }
perf record -F 499 -o "$RUN/perf.data" -p "$PID" 2>"$RUN/perf.log" &
PERF=$!
wait_step "$STEPS" || true
kill -INT "$PERF"
wait "$PERF" || true
wait "$PID" || { cat "$RUN/meshlm.log" >&2; echo "meshlm failed" >&2; exit 1; }
rm -f "$RUN"/run/*.safetensors
perf report -i "$RUN/perf.data" --no-children --sort dso,sym --stdio 2>/dev/null >"$RUN/report.txt"

python3 - "$RUN" "$PRECISION" "$STEPS" "$(basename "$MESHLM_CONFIG" .yaml)" <<'EOF'
import json, re, statistics, sys

run, precision, steps, model = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
recs = [json.loads(l) for l in open(f"{run}/run/metrics.jsonl") if l.strip()]
tps = [r["tokens_per_s"] for r in recs if "tokens_per_s" in r and r["step"] > 2]
step_tokens = None
for line in open(f"{run}/meshlm.log"):
    m = re.search(r"batch_size=(\d+) seq_len=(\d+)", line)
    if m:
        step_tokens = int(m.group(1)) * int(m.group(2))
step_s = step_tokens / statistics.median(tps) if tps and step_tokens else None

def kernel_name(sym):
    """The kernel a C++ symbol belongs to: element-wise maps (map8<...activation_backward...>)
    count as the op that instantiated them; namespaces and templates are dropped."""
    sym = sym.replace("(anonymous namespace)::", "")
    m = re.search(r"map\d+<meshlm::([\w:]+)\(", sym)
    if m:
        return m.group(1)
    sym = re.sub(r"^meshlm::", "", sym)
    return re.split(r"[(<]", sym, 1)[0]

rows = {}
for line in open(f"{run}/report.txt"):
    m = re.match(r"\s*([0-9.]+)%\s+(\[JIT\] tid \d+|\S+)\s+\[\.\]\s+(.*)$", line)
    if not m:
        continue
    pct, dso, sym = float(m.group(1)), m.group(2), m.group(3).strip()
    if dso.startswith("[JIT]"):
        name = "GEMM: oneDNN JIT code (sgemm / bf16 matmul)"
    elif dso.startswith("libgomp"):
        name = "OpenMP runtime (barriers, idle waits)"
    elif dso.startswith("libdnnl"):
        name = "oneDNN library (GEMM driver, packing)"
    else:
        name = kernel_name(sym) if dso == "meshlm" else f"{kernel_name(sym)} ({dso})"
    rows[name] = rows.get(name, 0.0) + pct
total = sum(rows.values())
print(f"\n== where a {precision} {model} step goes ({len(tps)} steps sampled"
      + (f", {step_s:.2f} s per step" if step_s else "") + ")")
print(f"{'share':>7}  {'s/step':>7}  kernel")
other = 0.0
for name, pct in sorted(rows.items(), key=lambda kv: -kv[1]):
    share = pct / total
    if share < 0.004:
        other += share
        continue
    secs = f"{share * step_s:7.3f}" if step_s else "    n/a"
    print(f"{100 * share:6.1f}%  {secs}  {name}")
if other:
    print(f"{100 * other:6.1f}%  {other * step_s if step_s else 0:7.3f}  everything below 0.4 % each")
EOF
