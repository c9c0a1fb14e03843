#!/usr/bin/env bash
# CI's sanitizer subset (scripts/test.sh runs it after the unit tests; docs/testing.md
# "Sanitizers"): every parser of untrusted input under ASan + UBSan + LSan. The whole suite
# (scripts/sanitize/run.sh) builds every target twice more and would take CI past its 45 minutes.
# The fuzz build (build-fuzz/, cmake/fuzz.cmake: clang 14, the parsers' sources instrumented, the
# rest linked from build/'s g++ library) builds the replay driver, and its fuzz_replay_<target>
# tests run as in the ordinary suite: every seed and regression input, then seeded mutations.
# Skipped (exit 0, saying so) without clang++-14.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v clang++-14 >/dev/null; then
  echo "sanitize-ci: clang++-14 not found; the sanitized parser tests are skipped" >&2
  exit 0
fi

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
[ -f build/CMakeCache.txt ] || cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}"
cmake --build build -j "$(nproc)" --target meshlm_lib
cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMESHLM_SANITIZE=address -DMESHLM_FUZZ=ON \
  -DMESHLM_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target fuzz_replay

supp=$PWD/scripts/sanitize
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
exec ctest --test-dir build-fuzz --output-on-failure -R '^fuzz_replay_' -j "$(nproc)"
