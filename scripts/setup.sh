#!/usr/bin/env bash
# Installs every Debian package meshlm needs and builds it in Release mode into build/.
# Usage: scripts/setup.sh        (run as root, or with sudo available)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config
  libdnnl-dev                 # GEMM (oneDNN, OpenMP build: shares our thread pool)
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev
  zlib1g-dev libzstd-dev      # .gz / .zst corpora (meshlm prepare)
  libsentencepiece-dev        # SentencePiece .model tokenizers and spm-* train-tokenizer
  libcairo2-dev               # the coordinate check's plots (SVG and PNG)
  openmpi-bin libopenmpi-dev  # distributed runs (mpirun) and the MPI tests
  iproute2                    # ip netns / veth: the two-"host" MPI test (scripts/netns_mpi.sh)
  libgtest-dev                # tests
  libcpp-httplib-dev          # meshlm serve's HTTP server (cpp-httplib)
  chromium                    # the playground test drives the page in headless Chromium
  fortunes                    # the default training corpus
  time                        # peak-RSS measurement in bench/
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Test tooling from PyPI, in .venv/ (ignored by git): the `openai` client and lm-evaluation-harness
# (no torch needed: its local-completions model talks to `meshlm serve`), for the serving tests.
if ! .venv/bin/python -c 'import openai, lm_eval, tenacity' 2>/dev/null; then
  echo "setup: installing openai and lm-eval into .venv/"
  { [ -x .venv/bin/python ] || python3 -m venv .venv; } &&
    .venv/bin/pip install -q --disable-pip-version-check "openai>=1.0" "lm-eval[api]>=0.4.9" ||
    echo "setup: WARNING: could not install the Python test tooling; the serving tests that use" \
         "it will fail until .venv has openai and lm-eval" >&2
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)"
echo "setup: built build/meshlm"
