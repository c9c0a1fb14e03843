#!/usr/bin/env bash
# Where a training step's wall time goes, per OpenMP parallel region: runs `meshlm train` on
# synthetic tokens with bench/omp_regions.c preloaded (built here with cc), counts from the end
# of step 2 to the end of step STEPS-1, and prints each region's calls and seconds per step,
# oneDNN's (its GEMMs) as one row, and the time outside every region (serial code). A region's
# time is the wall time from fork to join: its slowest thread's work plus the barrier waits,
# which perf samples (bench/profile_step.sh) split off as "OpenMP runtime".
#
#   bench/omp_regions.sh [--precision fp32|bf16] [--steps 8] [--batch 4] [--seq 256]
#                        [--threads 2] [-- extra meshlm train flags]
#
# Environment: MESHLM_BIN (default build/meshlm), MESHLM_CONFIG (default configs/gpt2-small.yaml;
# configs/smollm-135m.yaml for the Llama of bench/train_llama_small.sh), OUT_DIR (bench/out).
set -euo pipefail

PRECISION=fp32
HELP_LINES='2,13p'
source "$(dirname "${BASH_SOURCE[0]}")/step_run.sh"
parse_step_args "$@"
command -v cc >/dev/null || { echo "cc not found (apt-get install gcc)" >&2; exit 1; }

new_run_dir omp_regions
cc -O2 -shared -fPIC "$ROOT/bench/omp_regions.c" -o "$RUN/omp_regions.so" -ldl
start_step_run OMP_REGIONS_OUT="$RUN/regions.txt" LD_PRELOAD="$RUN/omp_regions.so"
# The library acts on a signal at the next region's start: the first region of the next step.
for at in "2 USR1" "$((STEPS - 1)) USR2"; do
  set -- $at
  wait_step "$1" || { cat "$RUN/meshlm.log" >&2; echo "meshlm ended early" >&2; exit 1; }
  kill "-$2" "$PID"
done
wait "$PID" || { cat "$RUN/meshlm.log" >&2; exit 1; }
[[ -s "$RUN/regions.txt" ]] || { echo "no region table was written" >&2; exit 1; }

echo "== $(basename "$MESHLM_CONFIG" .yaml), $PRECISION, batch $BATCH x seq $SEQ, $THREADS threads:" \
  "steps 3-$((STEPS - 1)), wall time per step" | tee "$RUN/report.txt"
python3 - "$RUN/regions.txt" $((STEPS - 3)) <<'EOF' | tee -a "$RUN/report.txt"
import subprocess, sys
path, steps = sys.argv[1], int(sys.argv[2])
rows, window, outside = {}, 0.0, 0.0


def short(demangled):
    """'void meshlm::kernels::(anonymous namespace)::glu_rows<meshlm::kernels::glu_forward(...)
    ...>(...) [clone ._omp_fn.0]' -> 'glu_rows<glu_forward>'."""
    s = demangled.split(" [clone")[0]
    for junk in ("(anonymous namespace)::", "meshlm::", "kernels::"):
        s = s.replace(junk, "")
    if s.startswith("void ") or s.startswith("double ") or s.startswith("float "):
        s = s.split(" ", 1)[1]
    cut = min([i for i in (s.find("<"), s.find("(")) if i >= 0] or [len(s)])
    base = s[:cut]
    if cut < len(s) and s[cut] == "<":
        inner = s[cut + 1:]
        end = min([i for i in (inner.find("("), inner.find("<"), inner.find(","), inner.find(">"))
                   if i >= 0] or [len(inner)])
        base += "<" + inner[:end] + ">"
    return base

for line in open(path):
    f = line.split()
    if f[0] == "window":
        window, outside = float(f[1]), float(f[3])
        continue
    calls, sec, module, off = int(f[0]), float(f[1]), f[2], f[3]
    if "libdnnl" in module:
        name = "oneDNN (GEMMs and the bf16 matmuls)"
    else:
        out = subprocess.run(["addr2line", "-f", "-C", "-e", module, off],
                             capture_output=True, text=True).stdout.split("\n")[0]
        name = short(out) or f"{module}+{off}"
    c, s = rows.get(name, (0, 0.0))
    rows[name] = (c + calls, s + sec)
print(f"{'share':>7} {'s/step':>8} {'calls/step':>11}  region")
for name, (c, s) in sorted(rows.items(), key=lambda kv: -kv[1][1]):
    print(f"{100 * s / window:6.1f}% {s / steps:8.4f} {c / steps:11.0f}  {name}")
print(f"{100 * outside / window:6.1f}% {outside / steps:8.4f} {'':>11}  outside any region (serial code)")
print(f"{'':>7} {window / steps:8.4f} {'':>11}  the step")
EOF
