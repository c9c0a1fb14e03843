#!/usr/bin/env bash
# End-to-end Llama training throughput at GPT-2-small size: SmolLM-135M's shape
# (configs/smollm-135m.yaml: 30 layers, width 576, 9 heads / 3 key/value heads, SwiGLU 1536,
# RMSNorm, rotary, tied head, vocab 49152) in meshlm, then the plain-PyTorch peer
# bench/pytorch_llama_train.py (run with .venv/bin/python, PyPI torch 2.x), same shapes / batch /
# threads, in one run. Prints tokens/s, GFLOP/s, MFU and peak RSS for each, and the
# meshlm/PyTorch ratios. See bench/README.md.
#
#   bench/train_llama_small.sh [--steps 6] [--batch 4] [--seq 256] [--threads 2]
#                              [--skip-meshlm] [--skip-pytorch]
#                              [--layers 30] [--width 576] [--heads 9] [--kv-heads 3]
#                              [--ff 1536] [--vocab 49152]
#
# This is bench/train_gpt2_small.sh --arch llama: the options and the environment (MESHLM_BIN,
# MESHLM_CONFIG, PYTHON, PEAK_GFLOPS, OMP_WAIT_POLICY_TORCH, TORCH_MALLOC, TORCH_COMPILE=1,
# OUT_DIR, KEEP_CHECKPOINT) are described there.
exec "$(dirname "${BASH_SOURCE[0]}")/train_gpt2_small.sh" --arch llama "$@"
