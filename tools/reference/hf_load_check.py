#!/usr/bin/env python3
"""Load a Hugging Face checkpoint directory with transformers and compare its logits to a fixture.

    .venv/bin/python tools/reference/hf_load_check.py DIR REF [--tol 1e-4]

DIR is a save_pretrained-style directory (config.json + model.safetensors or a sharded
index), e.g. one written by `meshlm convert --to hf`; transformers picks the model class from
config.json's model_type (AutoModelForCausalLM). REF is a safetensors file with `tokens`
(int [B, T]) and `logits` ([B, T, V]), e.g. tests/fixtures/hf_llama_tiny_ref.safetensors.
Prints max |logits(DIR) - REF's logits| on REF's tokens (fp32, eval mode, no cache) and exits
non-zero when it exceeds --tol, or when transformers reports missing, unexpected or
mismatched weights.
"""

import argparse
import sys

import torch
import transformers
from safetensors.torch import load_file


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", help="Hugging Face model directory")
    ap.add_argument("ref", help="safetensors file with `tokens` and `logits`")
    ap.add_argument("--tol", type=float, default=1e-4)
    args = ap.parse_args()

    transformers.utils.logging.disable_progress_bar()
    ref = load_file(args.ref)
    tokens, want = ref["tokens"].long(), ref["logits"].float()
    model, info = transformers.AutoModelForCausalLM.from_pretrained(
        args.dir, dtype=torch.float32, output_loading_info=True)
    model.eval()
    bad = {k: v for k, v in info.items() if v}
    with torch.no_grad():
        got = model(input_ids=tokens, use_cache=False).logits.float()
    if got.shape != want.shape:
        sys.exit(f"logits shape {tuple(got.shape)} != reference {tuple(want.shape)}")
    err = (got - want).abs().max().item()
    print(f"{model.config.model_type} ({type(model).__name__}): max |logits - ref| = {err:.3e}"
          f" over {tuple(want.shape)}")
    if bad:
        print(f"loading problems: {bad}")
    if bad or not err <= args.tol:
        sys.exit(1)


if __name__ == "__main__":
    main()
