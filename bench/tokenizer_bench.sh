#!/usr/bin/env bash
# Tokenizer encode throughput, GPT-2 vocabulary, one thread each: meshlm (.tiktoken and the
# equivalent tokenizer.json) vs tiktoken vs HF tokenizers on the fortunes corpus.
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
rank=$root/tests/fixtures/tokenizers/gpt2.tiktoken
"$py" "$root/bench/tokenizer_bench.py" "$rank" "$corpus" --hf-json "$out/gpt2_tokenizer.json" \
  | tee "$out/python.txt"
"$build/bench/tokenizer_bench" "$rank" "$corpus" | tee "$out/meshlm_tiktoken.txt"
"$build/bench/tokenizer_bench" "$out/gpt2_tokenizer.json" "$corpus" | tee "$out/meshlm_json.txt"
mbs() { sed -n 's/.* \([0-9.]*\) MB\/s$/\1/p' "$1" | head -1; }
tk=$(grep '^tiktoken' "$out/python.txt" | sed -n 's/.* \([0-9.]*\) MB\/s$/\1/p')
hf=$(grep '^hf_tokenizers' "$out/python.txt" | sed -n 's/.* \([0-9.]*\) MB\/s$/\1/p')
m=$(mbs "$out/meshlm_tiktoken.txt")
awk -v m="$m" -v tk="$tk" -v hf="$hf" 'BEGIN {
  printf "meshlm %.2f MB/s = %.2fx tiktoken (%.2f MB/s), %.2fx HF tokenizers (%.2f MB/s)\n",
         m, m / tk, tk, m / hf, hf }'
