#!/usr/bin/env bash
# Two meshlm binaries' training throughput and peak RSS, alternated in one run: the check that a
# change is "no slower, no bigger" than the binary before it. Each round runs
# bench/train_gpt2_small.sh --skip-pytorch (and/or --arch llama) once per binary, A first in odd
# rounds and B first in even ones, so drift of the host falls on both alike; then per-round
# B/A ratios and their median.
#
#   bench/train_ab.sh A_BIN [B_BIN] [--rounds 3] [--arch gpt2|llama|both] [-- script flags]
#
# B_BIN defaults to build/meshlm. Flags after -- go to train_gpt2_small.sh (e.g. --steps 8).
# Both binaries run under the caller's environment: to compare code alone across a change of
# meshlm's OpenMP default (core/omp_wait_policy.h), set GOMP_SPINCOUNT for both.
# Build an older commit's binary with: git worktree add /tmp/old REV && cmake -S /tmp/old
#   -B /tmp/old/b -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build /tmp/old/b --target meshlm
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 1 ] || usage
A=$1; shift
B=$ROOT/build/meshlm
[[ $# -gt 0 && $1 != --* ]] && { B=$1; shift; }
ROUNDS=3 ARCHS="gpt2 llama" EXTRA=()
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --arch) case $2 in gpt2|llama) ARCHS=$2 ;; both) ARCHS="gpt2 llama" ;;
              *) echo "train_ab: --arch must be gpt2, llama or both, got '$2'" >&2; exit 2 ;; esac
            shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) echo "train_ab: unknown flag '$1'" >&2; usage ;;
  esac
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "train_ab: --rounds must be a positive whole number" >&2; exit 2; }
for bin in "$A" "$B"; do [ -x "$bin" ] || { echo "train_ab: $bin is not an executable" >&2; exit 2; }; done
OUT_DIR=${OUT_DIR:-$ROOT/bench/out}
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for ((r = 1; r <= ROUNDS; r++)); do
  order="A B"; (( r % 2 )) || order="B A"
  for arch in $ARCHS; do
    for side in $order; do
      bin=$A; [ "$side" = B ] && bin=$B
      # The row: impl tokens/s step-s GFLOP/s MFU peak-RSS-MiB other-load notes...
      row=$(MESHLM_BIN=$bin OUT_DIR=$OUT_DIR bash bench/train_gpt2_small.sh --arch "$arch" \
              --skip-pytorch "${EXTRA[@]}" 2>&1 | grep '^meshlm ') ||
        { echo "train_ab: the $arch run of $bin failed (see $OUT_DIR)" >&2; exit 1; }
      read -r _ tps _ _ _ rss load _ <<<"$row"
      printf 'round %d %-5s %s: %8.1f tokens/s  peak RSS %6s MiB  other load %s\n' \
        "$r" "$arch" "$side" "$tps" "$rss" "$load"
      echo "$r $arch $side $tps $rss" >>"$results"
    done
  done
done
echo "A = $A"
echo "B = $B"
python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
val = {(r, a, s): (float(t), float(m)) for r, a, s, t, m in rows}
for arch in dict.fromkeys(a for _, a, _, _, _ in rows):
    rounds = sorted({int(r) for r, a, *_ in rows if a == arch})
    tps = [val[(str(r), arch, "B")][0] / val[(str(r), arch, "A")][0] for r in rounds]
    rss = [val[(str(r), arch, "B")][1] / val[(str(r), arch, "A")][1] for r in rounds]
    print(f"{arch}: B/A tokens/s per round " + " ".join(f"{x:.3f}" for x in tps) +
          f", median {statistics.median(tps):.3f}; peak RSS median {statistics.median(rss):.3f}")
PY
