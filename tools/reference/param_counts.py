#!/usr/bin/env python3
"""Parameter counts of real model configs, computed by `transformers` on the meta device.

No weights are downloaded or allocated: each model is built from a config written out here
(the published config.json values that matter for the count) under torch.device("meta"), and
its parameters are summed (model.parameters() lists a tied weight once). Buffers -- GPT-J's
sinusoid table, rotary inv_freq -- are not parameters and are listed separately.

    .venv/bin/python tools/reference/param_counts.py

See tools/reference/README.md for the numbers and the GPT-J-6B comparison.
"""

import torch
import transformers

CONFIGS = {
    "GPT-J-6B": transformers.GPTJConfig(
        vocab_size=50400, n_positions=2048, n_embd=4096, n_layer=28, n_head=16, rotary_dim=64,
        n_inner=None, activation_function="gelu_new", tie_word_embeddings=False),
    "Llama-3.2-1B": transformers.LlamaConfig(
        vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
        num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=True,
        max_position_embeddings=131072,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0,
                         "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192}),
    "SmolLM-135M": transformers.LlamaConfig(
        vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
        num_attention_heads=9, num_key_value_heads=3, tie_word_embeddings=True,
        max_position_embeddings=2048,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
}


def count(cfg):
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(cfg)
    params = sum(p.numel() for p in model.parameters())  # tied weights once
    buffers = {n: b.numel() for n, b in model.named_buffers()}
    by_kind = {}
    for n, p in model.named_parameters():
        kind = n.rsplit(".", 1)[-1]
        by_kind[kind] = by_kind.get(kind, 0) + p.numel()
    return params, by_kind, buffers


def main():
    transformers.utils.logging.set_verbosity_error()
    for name, cfg in CONFIGS.items():
        params, by_kind, buffers = count(cfg)
        kinds = ", ".join(f"{k} {v:,}" for k, v in sorted(by_kind.items()))
        nbuf = sum(buffers.values())
        print(f"{name}: {params:,} parameters ({kinds}); "
              f"{len(buffers)} buffers, {nbuf:,} elements")


if __name__ == "__main__":
    main()
