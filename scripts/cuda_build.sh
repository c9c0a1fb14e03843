#!/usr/bin/env bash
# Compiles the CUDA backend (-DMESHLM_CUDA=ON) into build-cuda/ and runs its op tests, which
# skip without a GPU (what still runs checks that CUDA requests fail cleanly there). Only what a
# CUDA build adds is built: meshlm_kernels (core, kernels and kernels/cuda), the NCCL
# communicator and the test binary; the rest of meshlm compiles the same as in build/.
# Skipped, with a message, where there is no nvcc. scripts/test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
nvcc=$(command -v nvcc || true)
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$nvcc" ]; then
  echo "cuda_build: no nvcc (CUDA toolkit): skipping the CUDA build"
  exit 0
fi
[ -f build-cuda/build.ninja ] ||
  cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DMESHLM_CUDA=ON \
    -DCMAKE_CUDA_COMPILER="$nvcc"
cmake --build build-cuda -j 2 --target meshlm_kernels meshlm_nccl cuda_ops_test
build-cuda/tests/cuda/cuda_ops_test --gtest_brief=1
