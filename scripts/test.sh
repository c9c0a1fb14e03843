#!/usr/bin/env bash
# Runs every test. On first use it installs what only the tests need (the Debian packages below,
# and openai, lm-eval and transformers into .venv/) and builds every target; later runs rebuild
# what changed.
# With no arguments: the fast `unit` tests two at a time, then the `slow` ones alone (they train
# for minutes on both cores, and sharing the cores with other tests only slows everything). Any
# arguments go to ctest instead (e.g. -L unit).
# --sanitize[=address] [ctest args]: ASan + UBSan build in build-asan/, then the unit and MPI
# tests (-LE slow) or the given ctest arguments; --sanitize=thread: TSan (clang, libomp, Archer)
# in build-tsan/ and the tests labelled tsan: the CPU kernels on 2 OpenMP threads and the serving
# engine (scripts/sanitize/run.sh says what runs and why).
set -euo pipefail
cd "$(dirname "$0")/.."

# The product's packages first (a no-op after scripts/setup.sh), then the tests' own.
bash scripts/setup.sh
packages=(
  libgtest-dev                # GoogleTest
  iproute2                    # ip netns / veth: the two-"host" MPI test (scripts/netns_mpi.sh)
  chromium                    # the playground test drives the page in headless Chromium
  python3-venv                # .venv for the serving tests' Python tooling (below)
  curl                        # the documented serve examples (readme_flow_test)
  time                        # /usr/bin/time: bench/'s peak-RSS measurements
  clang-14 libclang-rt-14-dev # the sanitized parser tests (scripts/sanitize/ci.sh), TSan
  libomp-14-dev               # LLVM's OpenMP and Archer for the TSan build (--sanitize=thread)
)
bash scripts/install_packages.sh "${packages[@]}"

# Test tooling from PyPI, in .venv/ (ignored by git): the `openai` client and lm-evaluation-harness
# (no torch needed: its local-completions model talks to `meshlm serve`), for the serving tests;
# transformers and tokenizers (no torch needed for AutoTokenizer) for the HF export's tokenizer;
# tensorboard, whose own event reader checks the event files the trainer writes.
if ! .venv/bin/python -c 'import openai, lm_eval, tenacity, transformers, tokenizers, tensorboard' 2>/dev/null; then
  echo "test: installing openai, lm-eval, transformers and tensorboard into .venv/"
  { [ -x .venv/bin/python ] || python3 -m venv .venv; } &&
    .venv/bin/pip install -q --disable-pip-version-check "openai>=1.0" "lm-eval[api]>=0.4.9" \
      "transformers>=5.0" "tokenizers>=0.22" jinja2 "tensorboard>=2.14" ||
    echo "test: WARNING: could not install the Python test tooling; the serving and export tests" \
         "that use it will fail until .venv has openai, lm-eval, transformers and tensorboard" >&2
fi

if [[ ${1:-} == --sanitize || ${1:-} == --sanitize=* ]]; then
  kind=${1#--sanitize}
  shift
  exec bash scripts/sanitize/run.sh "${kind#=}" "$@"
fi

# A build/ that scripts/setup.sh configured before GoogleTest was installed has no tests yet:
# configure again (cheap), then build every target.
[ -f build/tests/CTestTestfile.cmake ] || cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)"
if [ $# -gt 0 ]; then
  exec ctest --test-dir build --output-on-failure "$@"
fi
# The CUDA build compiles too (build-cuda/; skipped without nvcc), its op tests skipping without
# a GPU.
bash scripts/cuda_build.sh
# Tests that run side by side each use both cores: idle OpenMP threads sleep instead of spinning.
OMP_WAIT_POLICY=PASSIVE ctest --test-dir build --output-on-failure -j 2 -LE slow
ctest --test-dir build --output-on-failure -L slow
# CI's sanitizer subset: the parsers of untrusted input under ASan + UBSan (build-fuzz/, about
# 5 minutes from scratch on a slow 2-core machine; scripts/sanitize/ci.sh). The whole suite:
# --sanitize, above. CI (.ci/run) must end within 45 minutes of its start, MESHLM_CI_STARTED:
# on a machine slow enough that the rest took over 37 of them, the subset is skipped, saying so.
elapsed=$(($(date +%s) - ${MESHLM_CI_STARTED:-$(date +%s)}))
if [ "$elapsed" -gt $((37 * 60)) ]; then
  echo "test.sh: the sanitized parser tests are skipped: CI has run $((elapsed / 60)) minutes" \
    "and they take about 5 more of its 45 (run scripts/sanitize/ci.sh)" >&2
else
  bash scripts/sanitize/ci.sh
fi
