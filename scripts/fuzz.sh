#!/usr/bin/env bash
# Fuzzes one parser with libFuzzer (docs/reliability.md "Fuzzing"; the targets are fuzz/*.cpp).
#   scripts/fuzz.sh TARGET SECONDS [libFuzzer flags...]   build fuzz_TARGET, fuzz it for SECONDS
#   scripts/fuzz.sh TARGET 0 [flags...]                   build it, then just run the corpus
#   scripts/fuzz.sh --list                                the targets
# The build: the ordinary g++ build's library first (build/, meshlm_lib only), then build-fuzz/:
# clang++-14, -DMESHLM_SANITIZE=address (ASan + UBSan, as scripts/sanitize/run.sh) and
# -DMESHLM_FUZZ=ON (libFuzzer coverage) on the parsers' sources and the kernels, linked with the
# rest of build/'s library (cmake/fuzz.cmake), only the target asked for. The run starts from fuzz/corpus/TARGET (the seeds) and fuzz/regressions/TARGET
# (inputs of crashes found and fixed); new inputs go to build-fuzz/corpus/TARGET, a crash, leak,
# timeout (-timeout 10 s) or allocation over 512 MB (-malloc_limit_mb) to fuzz/crashes/TARGET/.
# The libFuzzer flags given replace none of these; later ones win (e.g. -runs=1000000 -jobs=1).
# MESHLM_FUZZ_JOBS: build jobs (default 2). Runs niced (nice -n 15).
set -euo pipefail
cd "$(dirname "$0")/.."

targets=$(sed -n '/^set(MESHLM_FUZZ_TARGETS/,/)/p' fuzz/CMakeLists.txt |
  sed -e 's/set(MESHLM_FUZZ_TARGETS//' -e 's/)//' | tr -s ' \n' '\n' | grep -v '^$')
usage() {
  echo "usage: scripts/fuzz.sh TARGET SECONDS [libFuzzer flags...] | --list" >&2
  echo "targets: $(echo $targets)" >&2
  exit 2
}
[ $# -ge 1 ] || usage
if [ "$1" = --list ]; then
  echo "$targets"
  exit 0
fi
[ $# -ge 2 ] || usage
target=$1 seconds=$2
shift 2
grep -qx "$target" <<<"$targets" || { echo "fuzz: unknown target '$target'" >&2; usage; }
[[ $seconds =~ ^[0-9]+$ ]] || { echo "fuzz: SECONDS must be a whole number, got '$seconds'" >&2; usage; }
command -v clang++-14 >/dev/null || {
  echo "fuzz: clang++-14 not found (apt-get install clang-14 libclang-rt-14-dev)" >&2
  exit 2
}

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
[ -f build/CMakeCache.txt ] || cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}"
nice -n 15 cmake --build build -j "${MESHLM_FUZZ_JOBS:-2}" --target meshlm_lib
cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMESHLM_SANITIZE=address -DMESHLM_FUZZ=ON \
  -DMESHLM_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
nice -n 15 cmake --build build-fuzz -j "${MESHLM_FUZZ_JOBS:-2}" --target "fuzz_$target"

case $target in
  config_yaml) dict=fuzz/dict/yaml.dict ;;
  serve_http) dict=fuzz/dict/http.dict ;;
  safetensors | safetensors_index | tokenizer_json | prepared_meta | trainer_json | layout_json | \
    corpus_jsonl | serve_body) dict=fuzz/dict/json.dict ;;
  *) dict= ;;
esac
new=build-fuzz/corpus/$target crashes=fuzz/crashes/$target
mkdir -p "$new" "$crashes"
seeds=(fuzz/corpus/"$target")
[ -d fuzz/regressions/"$target" ] && seeds+=(fuzz/regressions/"$target")

supp=$PWD/scripts/sanitize
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
flags=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 -print_final_stats=1
  -artifact_prefix="$crashes/")
[ -n "$dict" ] && flags+=(-dict="$dict")
if [ "$seconds" -eq 0 ]; then
  flags+=(-runs=0)
else
  flags+=(-max_total_time="$seconds")
fi
exec nice -n 15 build-fuzz/fuzz/fuzz_"$target" "${flags[@]}" "$@" "$new" "${seeds[@]}"
