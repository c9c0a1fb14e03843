#!/usr/bin/env bash
# The sanitizer suites (scripts/test.sh --sanitize[=address|thread] [ctest args]; docs/testing.md
# "Sanitizers"). Not part of CI's default path: the two builds and the slowed-down tests would
# take CI past its 45 minutes.
#   address (the default): ASan + UBSan + LSan, build-asan/, the unit and MPI tests (-LE slow).
#   thread: TSan, build-tsan/, the tests of the serving engine (its HTTP threads, worker pool,
#     connection parker and scheduler) with OMP_NUM_THREADS=1. Debian's libgomp (and the
#     libgomp-built oneDNN) is not instrumented for TSan: every OpenMP barrier and reduction would
#     be reported as a race, so the OpenMP kernels are not checked by TSan here.
# Any further arguments replace the default ctest selection (e.g. -R Tokenizer -j 2).
set -euo pipefail
cd "$(dirname "$0")/../.."
kind=${1:-address}
shift || true
case $kind in
  address) build=build-asan ;;
  thread) build=build-tsan ;;
  *) echo "sanitize: unknown sanitizer '$kind' (address or thread)" >&2; exit 2 ;;
esac

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMESHLM_SANITIZE="$kind" \
  -DMESHLM_BUILD_BENCH=OFF "${launcher[@]}"
nice cmake --build "$build" -j "$(nproc)"

supp=$PWD/scripts/sanitize
# halt_on_error: the first report fails the test; print_stacktrace: UBSan names the call chain.
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0:strict_init_order=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp
export OMP_WAIT_POLICY=PASSIVE
if [ $# -eq 0 ]; then
  if [ "$kind" = address ]; then
    set -- -LE slow -j 2
  else
    export OMP_NUM_THREADS=1
    set -- -R '^(Serve|ServeAuth|ServeChat|ServeLimits|ServeLoad|ServeHostile|Generate)\.' -j 2
  fi
fi
exec ctest --test-dir "$build" --output-on-failure "$@"
