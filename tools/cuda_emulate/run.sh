#!/usr/bin/env bash
# Runs kernels/cuda/ on this CPU under the host emulation in shim/ and compares every op with
# the CPU kernels (check.cpp). Needs the CPU build (build/libmeshlm_kernels.a, or the library
# MESHLM_KERNELS_LIB names: ctest's cuda_emulate test), no GPU and no CUDA toolkit. A
# development check of the kernels' logic, not a GPU test: see docs/cuda.md.
#   tools/cuda_emulate/run.sh [GROUP...]   (check.cpp's kGroups; none: all)
set -euo pipefail
cd "$(dirname "$0")/../.."
lib=${MESHLM_KERNELS_LIB:-build/libmeshlm_kernels.a}
[ -f "$lib" ] || cmake --build build --target meshlm_kernels
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/inc/meshlm/kernels/cuda"
# k<<<grid, block[, smem]>>>(args) -> ::emu::Launch{grid, block[, smem]}(k, args); the
# templated launch in norm_columns.cuh needs its template argument spelled out.
rewrite() {
  sed -E -e 's/([^ ]+)<<<(.*)>>>\(/::emu::Launch{\2}(\1, /' \
         -e 's/extern __shared__ float smem\[\];/float* smem = ::emu::dynamic_smem();/' \
         -e 's/\(norm_column_grads, /(norm_column_grads<Xhat>, /' "$1" > "$2"
}
for f in src/meshlm/kernels/cuda/*.cuh; do rewrite "$f" "$work/inc/meshlm/kernels/cuda/$(basename "$f")"; done
sources=()
for f in src/meshlm/kernels/cuda/*.cu src/meshlm/kernels/cuda/gemm.cpp; do
  out="$work/$(basename "${f%.*}").cpp"
  rewrite "$f" "$out"
  sources+=("$out")
done
# One compiler per source, as many at once as there are cores (one g++ for all ~40 files took
# minutes on one core while the other idled).
cp tools/cuda_emulate/check.cpp "$work/check_main.cpp"
printf '%s\n' "$work/check_main.cpp" "${sources[@]}" |
  xargs -P "$(nproc)" -I{} g++ -std=c++20 -O1 -fopenmp -Itools/cuda_emulate/shim -I"$work/inc" \
    -Isrc -Itools/cuda_emulate -c {} -o {}.o
g++ "$work"/*.cpp.o "$lib" -fopenmp -ldnnl -lpthread -o "$work/check"
"$work/check" "$@"
