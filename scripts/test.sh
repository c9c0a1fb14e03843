#!/usr/bin/env bash
# Runs every test. Builds first if needed. With no arguments: the fast `unit` tests two at a
# time, then the `slow` ones alone (they train for minutes on both cores, and sharing the cores
# with other tests only slows everything). Any arguments go to ctest instead (e.g. -L unit).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/build.ninja ] || cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
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
