#!/usr/bin/env bash
# The sanitizer suites (scripts/test.sh --sanitize[=address|thread] [ctest args]; docs/testing.md
# "Sanitizers"). Not part of CI's default path (its subset: scripts/sanitize/ci.sh): the two
# builds and the slowed-down tests would take CI past its 45 minutes.
#   address (the default): ASan + UBSan + LSan, g++, build-asan/, every target, the unit and MPI
#     tests (-LE slow; the MPI tests without LSan, below).
#   thread: TSan, clang with LLVM's libomp and its Archer tool (cmake/sanitize_thread.cmake),
#     build-tsan/, the tests labelled `tsan` (tests/CMakeLists.txt: the CPU kernels, the model,
#     the optimizers, the BPE trainer and the serving engine) with OMP_NUM_THREADS=2.
# Any further arguments replace the default ctest selection (e.g. -R Tokenizer -j 2).
# ASan, LSan and TSan reports go to files under BUILD/sanitizer-reports/ as well as failing
# their process: a test that expects a child (`meshlm ...`, an MPI rank) to fail would otherwise
# take the sanitizer's exit status for the failure it wanted. Any report there fails the run.
# GCC's libubsan ignores log_path: its reports go to stderr, and the process exits with 99.
set -euo pipefail
cd "$(dirname "$0")/../.."
kind=${1:-address}
shift || true
compilers=()
case $kind in
  address) build=build-asan ;;
  thread) build=build-tsan compilers=(-DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14) ;;
  *) echo "sanitize: unknown sanitizer '$kind' (address or thread)" >&2; exit 2 ;;
esac

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMESHLM_SANITIZE="$kind" \
  -DMESHLM_BUILD_BENCH=OFF "${compilers[@]}" "${launcher[@]}"
if [ "$kind" = address ]; then
  nice cmake --build "$build" -j "$(nproc)"
else
  nice cmake --build "$build" -j "$(nproc)" --target meshlm_tsan_tests
fi

supp=$PWD/scripts/sanitize
reports=$PWD/$build/sanitizer-reports
rm -rf "$reports" && mkdir -p "$reports"
# halt_on_error: the first report fails the process; print_stacktrace: UBSan names the call chain.
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0:strict_init_order=1:log_path=$reports/asan
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=99
export LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp:log_path=$reports/tsan
export OMP_WAIT_POLICY=PASSIVE
if [ "$kind" = thread ]; then
  # Two OpenMP threads in every test process, so each parallel region has a second thread.
  export OMP_NUM_THREADS=2
fi
status=0
if [ $# -gt 0 ]; then
  ctest --test-dir "$build" --output-on-failure "$@" || status=$?
elif [ "$kind" = thread ]; then
  ctest --test-dir "$build" --output-on-failure -L tsan -j 2 || status=$?
else
  ctest --test-dir "$build" --output-on-failure -LE 'slow|mpi' -j 2 || status=$?
  # The MPI tests without leak checking: Open MPI 4.1 leaves what MPI_Init allocates (thousands
  # of blocks per rank, most in components it has dlclosed by exit, so LSan cannot name them)
  # unfreed. ASan and UBSan still check every rank.
  ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 ctest --test-dir "$build" --output-on-failure -L mpi ||
    status=$?
fi
if compgen -G "$reports/*" >/dev/null; then
  for f in "$reports"/*; do
    echo "=== sanitizer report $f" && head -c 20000 "$f"
  done
  echo "sanitize: $(ls "$reports" | wc -l) sanitizer report(s) in $reports" >&2
  status=1
fi
exit "$status"
