#!/usr/bin/env bash
# Creates .venv/ at the repository root with the Python reference libraries (test tooling only;
# meshlm itself never needs Python): HF tokenizers, tiktoken, transformers and PyTorch on CPU.
#
# PyPI's torch wheel links CUDA libraries even when only the CPU is used, so it is installed
# without its dependency list plus the few NVIDIA runtime libraries its loader needs to start.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip "setuptools>=77"
.venv/bin/pip install -q tokenizers tiktoken transformers safetensors numpy sympy networkx jinja2
.venv/bin/pip install -q --no-deps torch==2.15.0 nvidia-cufile nvidia-cusparselt-cu13 \
    nvidia-nvshmem-cu13 nvidia-nccl-cu13
.venv/bin/python -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
