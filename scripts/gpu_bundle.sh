#!/usr/bin/env bash
# Prepares gpu_bundle/ (git-ignored) on this CPU machine for scripts/gpu_check.sh on a GPU host
# that has a driver, the CUDA toolkit and PyTorch but no package registry: builds the CUDA test
# binaries and meshlm in build-cuda/ (scripts/cuda_build.sh) and copies them with every shared
# library they load (ldd; packed with xz) except glibc's and the CUDA ones, which the GPU host's
# own toolkit and driver provide (cuBLASLt alone is 540 MB, over the 64 MiB a bundle may weigh). The GPU host's CUDA
# major version must be this toolkit's (nvcc --version); gpu_check.sh says so if it is not.
#
#   scripts/gpu_bundle.sh          # then: scripts/gpu_check.sh on the GPU host (docs/cuda.md)
#   MESHLM_GPU_PREV=old/meshlm scripts/gpu_bundle.sh   # also times old/meshlm beside this one
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/cuda_build.sh >/dev/null
# meshlm and the training, decoding and reference tests need all of meshlm_lib in the CUDA
# configuration (CI builds only what the CUDA backend adds, scripts/cuda_build.sh).
cmake --build build-cuda -j 2 --target meshlm cuda_train_test cuda_decode_test cuda_reference_test \
  cuda_mesh_mpi_test >/dev/null
out=gpu_bundle
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
bins=(build-cuda/tests/cuda/cuda_ops_test build-cuda/tests/cuda/cuda_train_test
  build-cuda/tests/cuda/cuda_decode_test build-cuda/tests/cuda/cuda_reference_test
  build-cuda/tests/cuda/cuda_mesh_mpi_test build-cuda/meshlm)
cp "${bins[@]}" "$out/bin/"
# MESHLM_GPU_PREV: a CUDA meshlm of an earlier commit (say a copy of build-cuda/meshlm kept
# from before a change), timed beside this one in section 6 (gpu_model_check.sh's A/B).
if [ -n "${MESHLM_GPU_PREV:-}" ]; then
  cp "$MESHLM_GPU_PREV" "$out/bin/meshlm_prev"
  "$MESHLM_GPU_PREV" --version 2>/dev/null | sed -n "s/^commit: //p" >"$out/prev_commit" || true
fi
strip "$out"/bin/*
# The default run's corpus (Debian's fortunes), which the GPU host may not have.
cp -r /usr/share/games/fortunes "$out/fortunes"
# Libraries the GPU host brings itself: the C library's and the CUDA toolkit's / driver's.
host_provided='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libcuda|libcudart|libcublas|libcublasLt|libnccl|libnvidia)\.'
for b in "${bins[@]}"; do
  ldd "$b" | awk '/=> \// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ "$name" =~ $host_provided ]] && continue
  cp -L "$path" "$out/lib/$name"
done
# Packed, the binaries too (oneDNN alone is 40 MB; the six binaries 34 MB, 9 packed): a device
# call carries the bundle and the checkout within 64 MiB. gpu_check.sh unpacks them.
tar -C "$out" -cJf "$out/lib.tar.xz" lib
tar -C "$out" -cJf "$out/bin.tar.xz" bin
rm -rf "$out/lib" "$out/bin"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$nvcc" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p' >"$out/cuda_major"
git rev-parse --short HEAD >"$out/commit"
size=$(du -sm "$out" | cut -f1)
if [ "$size" -gt 64 ]; then
  echo "gpu_bundle: $out is $size MiB, over the 64 MiB a device run may carry" >&2
  exit 1
fi
echo "gpu_bundle: $out ($size MiB, packed): ${bins[*]##*/} and $(tar -tJf "$out/lib.tar.xz" | grep -c '\.so') libraries"
