#!/usr/bin/env bash
# Runs every test (labels unit, slow; dist once MPI tests exist). Builds first if needed.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/build.ninja ] || cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)"
ctest --test-dir build --output-on-failure -j 2 "$@"
