#!/usr/bin/env bash
# Tokenizer encode throughput, one thread each, on the fortunes corpus:
#  1. GPT-2 vocabulary: meshlm (.tiktoken and the equivalent tokenizer.json) vs tiktoken vs HF
#     tokenizers; with OLD=path/to/an/older/tokenizer_bench, that binary too, in the same run.
#  2. Every family of tests/fixtures/tokenizers/hf/ (tools/reference/hf_tokenizer_families.py):
#     meshlm's HfTokenizer vs HF tokenizers (TOKENIZERS_PARALLELISM=false, one document per
#     encode call), side by side with the ratio.
# Needs: ninja -C build tokenizer_bench; a venv with tiktoken + tokenizers (.venv).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
py=${PYTHON:-$root/.venv/bin/python}
out=$root/bench/out/tokenizer
mkdir -p "$out"
corpus=$out/fortunes.txt
if [[ ! -s $corpus ]]; then
  for f in /usr/share/games/fortunes/*.u8; do cat "$f"; echo "%"; done > "$corpus"
fi
export TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1 OMP_NUM_THREADS=1
rank=$root/tests/fixtures/tokenizers/gpt2.tiktoken
"$py" "$root/bench/tokenizer_bench.py" "$rank" "$corpus" --hf-json "$out/gpt2_tokenizer.json" \
  | tee "$out/python.txt"
"$build/bench/tokenizer_bench" "$rank" "$corpus" | tee "$out/meshlm_tiktoken.txt"
"$build/bench/tokenizer_bench" "$out/gpt2_tokenizer.json" "$corpus" | tee "$out/meshlm_json.txt"
mbs() { sed -n 's/.* \([0-9.]*\) MB\/s$/\1/p' "$1" | head -1; }
tk=$(grep '^tiktoken' "$out/python.txt" | sed -n 's/.* \([0-9.]*\) MB\/s$/\1/p')
hf=$(grep '^hf_tokenizers' "$out/python.txt" | sed -n 's/.* \([0-9.]*\) MB\/s$/\1/p')
m=$(mbs "$out/meshlm_tiktoken.txt")
mj=$(mbs "$out/meshlm_json.txt")
awk -v m="$m" -v mj="$mj" -v tk="$tk" -v hf="$hf" 'BEGIN {
  printf "meshlm .tiktoken %.2f MB/s = %.2fx tiktoken (%.2f MB/s), %.2fx HF tokenizers (%.2f MB/s)\n",
         m, m / tk, tk, m / hf, hf
  printf "meshlm tokenizer.json %.2f MB/s = %.2fx HF tokenizers\n", mj, mj / hf }'
if [[ -n ${OLD:-} ]]; then
  "$OLD" "$rank" "$corpus" | tee "$out/old_tiktoken.txt"
  "$OLD" "$out/gpt2_tokenizer.json" "$corpus" | tee "$out/old_json.txt"
  awk -v n="$m" -v o="$(mbs "$out/old_tiktoken.txt")" -v nj="$mj" -v oj="$(mbs "$out/old_json.txt")" \
    'BEGIN { printf "GPT-2 new/old: .tiktoken %.2f/%.2f MB/s = %.3fx, tokenizer.json %.2f/%.2f = %.3fx\n",
             n, o, n / o, nj, oj, nj / oj }'
fi

# 2. The families, side by side.
fams=("$root"/tests/fixtures/tokenizers/hf/*.json)
fams=("${fams[@]/*expected.json/}")
"$py" "$root/bench/tokenizer_families_bench.py" "$corpus" ${fams[@]} | tee "$out/families_hf.txt"
printf "%-24s %10s %10s %7s\n" family "meshlm" "HF" "ratio"
for f in ${fams[@]}; do
  name=$(basename "$f" .json)
  m=$("$build/bench/tokenizer_bench" "$f" "$corpus" | sed -n 's/.* \([0-9.]*\) MB\/s$/\1/p')
  h=$(grep "^$name:" "$out/families_hf.txt" | sed -n 's/.* \([0-9.]*\) MB\/s$/\1/p')
  awk -v n="$name" -v m="$m" -v h="$h" 'BEGIN { printf "%-24s %7.2f MB/s %7.2f MB/s %6.2fx\n", n, m, h, m / h }'
done | tee "$out/families.txt"
