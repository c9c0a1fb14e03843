#!/usr/bin/env bash
# muP's learning-rate transfer (seed 002's sweeps, "Tensor Programs V"): trains a grid of widths x
# learning rates 2^-l for a fixed number of steps on a corpus, several runs at once, and writes
# the seed's table (final validation loss per width and log2 lr, whether the best lr is the same
# at every width, whether wider is better at it) and a loss-vs-lr plot with one curve per width.
#
#   bench/mup_sweep.sh [--param mup|sp] [--widths 64,128,256,512] [--log2-lrs -10,-9,-8,-7,-6,-5]
#                      [--steps 150] [--jobs 2] [--out bench/out/mup_sweep-PARAM]
#                      [-- extra meshlm train flags]
#
# --param mup trains with model.mup.enabled, optim.mup_rule=mup (d_base = the narrowest width);
# --param sp with the standard parameterization (same init std 0.02, every tensor at lr). The
# shape (configs/tiny-gpt2.yaml's GPT-2 changed to 2 blocks of head width 32, RMSNorm, rotary,
# untied head, T = 64, B = 16, cosine to lr/10 after 10 % warmup) is set below; the corpus is
# that config's (fortunes). --jobs
# runs share the cores (train.threads = cores / jobs). Writes OUT/table.md, OUT/results.csv,
# OUT/loss_vs_lr.svg and every run under OUT/w<width>_lr<l>/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MESHLM="${MESHLM_BIN:-$ROOT/build/meshlm}"
PARAM=mup WIDTHS=64,128,256,512 LRS=-10,-9,-8,-7,-6,-5 STEPS=150 JOBS=2 OUT="" EXTRA=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --param) PARAM="$2"; shift 2 ;;
    --widths) WIDTHS="$2"; shift 2 ;;
    --log2-lrs) LRS="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) echo "mup_sweep: unknown option '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
[[ "$PARAM" == mup || "$PARAM" == sp ]] || { echo "mup_sweep: --param must be mup or sp" >&2; exit 2; }
[[ -x "$MESHLM" ]] || { echo "mup_sweep: $MESHLM not built (cmake --build build)" >&2; exit 2; }
OUT="${OUT:-$ROOT/bench/out/mup_sweep-$PARAM}"
mkdir -p "$OUT"
IFS=, read -r -a widths <<<"$WIDTHS"
IFS=, read -r -a lrs <<<"$LRS"
cores=$(nproc)
threads=$(( cores / JOBS > 0 ? cores / JOBS : 1 ))
base=${widths[0]}
warmup=$(( STEPS / 10 ))

common=(--config "$ROOT/configs/tiny-gpt2.yaml"
        --config.model.n_layer=2 --config.model.norm=rmsnorm --config.model.norm_bias=false
        --config.model.position=rope --config.model.tied_head=false
        --config.model.qkv_bias=false --config.model.proj_bias=false --config.model.mlp_bias=false
        --config.train.seq_len=64 --config.train.batch_size=16 --config.train.steps="$STEPS"
        --config.train.threads="$threads" --config.train.final_eval_batches=40
        --config.optim.warmup_steps="$warmup" --config.optim.schedule=cosine
        --config.log.eval_interval=0 --config.log.interval="$STEPS" --config.log.sample_tokens=0
        --config.checkpoint.interval=0 --config.train.precision=fp32)
if [[ "$PARAM" == mup ]]; then
  common+=(--config.model.mup.enabled=true --config.model.mup.d_base="$base"
           --config.optim.mup_rule=mup)
fi

# One line per run for xargs: width l
jobs_file="$OUT/jobs.txt"
: >"$jobs_file"
for w in "${widths[@]}"; do for l in "${lrs[@]}"; do echo "$w $l" >>"$jobs_file"; done; done
run_one() {
  local w=$1 l=$2
  local lr; lr=$(awk -v l="$l" 'BEGIN { printf "%.10g", 2 ^ l }')
  local dir="$OUT/w${w}_lr${l}"
  "$MESHLM" train "${common[@]}" --config.model.d_model="$w" --config.model.n_head=$(( w / 32 )) \
    --config.optim.lr="$lr" --config.optim.end_lr="$(awk -v x="$lr" 'BEGIN { printf "%.10g", x / 10 }')" \
    --config.log.dir="$dir" --force "${EXTRA[@]}" >"$dir.log" 2>&1 || true
  local val; val=$(grep -o '"val_loss": [0-9.eE+-]*' "$dir/metrics.jsonl" 2>/dev/null | tail -1 | awk '{print $2}')
  echo "$w,$l,${val:-nan}" >"$dir.result"
  echo "  width $w  log2 lr $l  val_loss ${val:-diverged}"
}
export -f run_one
export MESHLM OUT
export COMMON_ARGS="${common[*]} ${EXTRA[*]:-}"
echo "mup_sweep ($PARAM): ${#widths[@]} widths x ${#lrs[@]} learning rates, $STEPS steps, $JOBS at once x $threads threads -> $OUT"
# Arrays do not cross into xargs' shells: pass the flags as one string and split them again.
xargs -P "$JOBS" -L 1 bash -c 'common=($COMMON_ARGS); EXTRA=(); run_one "$0" "$1"' <"$jobs_file"

echo "width,log2_lr,val_loss" >"$OUT/results.csv"
cat "$OUT"/w*_lr*.result | sort -t, -k1,1n -k2,2n >>"$OUT/results.csv"

# The seed's table and verdicts, then the plot (plain SVG).
awk -F, -v param="$PARAM" -v steps="$STEPS" -v out="$OUT" '
function isort(a, n,    i, j, t) {  # ascending numeric, a[1..n] (mawk has no asort)
  for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
  return n
}
NR == 1 { next }
{ w = $1; l = $2; v = $3; W[w] = 1; L[l] = 1; val[w, l] = v
  if (v != "nan" && (!(w in best) || v + 0 < best[w] + 0)) { best[w] = v; bestl[w] = l } }
END {
  nw = 0; for (w in W) ws[++nw] = w + 0; n = isort(ws, nw)
  nl = 0; for (l in L) ls[++nl] = l + 0; isort(ls, nl)
  f = out "/table.md"
  printf "%s, %d steps: final validation loss (nats/token) per width and log2 learning rate; * = best of the width\n\n", param, steps > f
  printf "| width |" > f; for (j = 1; j <= nl; j++) printf " %d |", ls[j] > f; printf " best log2 lr |\n" > f
  printf "|---|" > f; for (j = 1; j <= nl; j++) printf "---|" > f; printf "---|\n" > f
  same = 1; wider = 1
  for (i = 1; i <= n; i++) {
    w = ws[i]; printf "| %d |", w > f
    for (j = 1; j <= nl; j++) { v = val[w, ls[j]]; printf " %s%s |", (v == "nan" ? "diverged" : sprintf("%.4f", v)), (ls[j] == bestl[w] ? "*" : "") > f }
    printf " %s |\n", bestl[w] > f
    if (bestl[w] != bestl[ws[1]]) same = 0
  }
  l0 = bestl[ws[1]]
  for (i = 2; i <= n; i++) if (!(val[ws[i], l0] + 0 < val[ws[i - 1], l0] + 0)) wider = 0
  printf "\nsame best learning rate at every width: %s; wider is better at log2 lr %s: %s\n", (same ? "yes" : "no"), l0, (wider ? "yes" : "no") > f
  close(f)
  # Plot: x = log2 lr, y = loss, a polyline per width.
  s = out "/loss_vs_lr.svg"; Wd = 640; Ht = 420; x0 = 60; y0 = 30; pw = 540; ph = 330
  lo = 1e9; hi = -1e9
  for (k in val) { v = val[k]; if (v != "nan") { if (v + 0 < lo) lo = v + 0; if (v + 0 > hi) hi = v + 0 } }
  if (hi - lo > 3) hi = lo + 3
  printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n", Wd, Ht > s
  printf "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"black\"/>\n", x0, y0, pw, ph > s
  printf "<text x=\"%d\" y=\"18\">%s: validation loss vs log2 learning rate, one line per width (darker = wider)</text>\n", x0, param > s
  for (j = 1; j <= nl; j++) printf "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>\n", x0 + pw * (j - 1) / (nl > 1 ? nl - 1 : 1), y0 + ph + 16, ls[j] > s
  printf "<text x=\"4\" y=\"%d\">%.2f</text><text x=\"4\" y=\"%d\">%.2f</text>\n", y0 + 10, hi, y0 + ph, lo > s
  for (i = 1; i <= n; i++) {
    w = ws[i]; shade = int(200 - 180 * (i - 1) / (n > 1 ? n - 1 : 1)); pts = ""
    for (j = 1; j <= nl; j++) { v = val[w, ls[j]]; if (v == "nan" || v + 0 > hi) continue
      pts = pts sprintf("%.1f,%.1f ", x0 + pw * (j - 1) / (nl > 1 ? nl - 1 : 1), y0 + ph * (hi - v) / (hi - lo + 1e-9)) }
    printf "<polyline fill=\"none\" stroke=\"rgb(%d,%d,255)\" stroke-width=\"2\" points=\"%s\"/>\n", shade, shade, pts > s
    printf "<text x=\"%d\" y=\"%d\" fill=\"rgb(%d,%d,255)\">width %d</text>\n", x0 + pw - 70, y0 + 16 * i, shade, shade, w > s
  }
  print "</svg>" > s
}' "$OUT/results.csv"
cat "$OUT/table.md"
echo "wrote $OUT/table.md, results.csv, loss_vs_lr.svg"
