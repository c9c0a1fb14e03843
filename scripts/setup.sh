#!/usr/bin/env bash
# Installs the Debian packages that building and running meshlm need, and builds the `meshlm`
# binary alone (Release) into build/. What only the tests need (GoogleTest, Chromium, a Python
# environment, ...) is installed and built by scripts/test.sh on first use.
# Usage: scripts/setup.sh        (run as root, or with sudo available)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config
  libdnnl-dev                 # GEMM (oneDNN, OpenMP build: shares our thread pool)
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev
  zlib1g-dev libzstd-dev      # .gz / .zst corpora (meshlm prepare)
  libsentencepiece-dev        # SentencePiece .model tokenizers and spm-* train-tokenizer
  libpcre2-dev                # tokenizer.json pre-tokenizer and normalizer regexes
  libcairo2-dev               # the coordinate check's plots (SVG and PNG)
  openmpi-bin libopenmpi-dev  # distributed runs (mpirun)
  libcpp-httplib-dev          # meshlm serve's HTTP server (cpp-httplib)
  fortunes                    # the default training corpus
)
bash scripts/install_packages.sh "${packages[@]}"

# Only the binary: the test executables (most of the build's targets) wait for scripts/test.sh.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)" --target meshlm
echo "setup: built build/meshlm"
