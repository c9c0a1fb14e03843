#!/usr/bin/env python3
"""Hugging Face `transformers` reference for meshlm's KV-cache generation (fixture generator).

Builds a tiny `transformers.GPT2LMHeadModel` from a config with seeded random weights (biases
and LayerNorm parameters randomized too, so none is a trivial 0 or 1), runs transformers'
own greedy `generate` (with and without a repetition penalty) on a few prompts, and writes
the weights in meshlm's layout plus the results to a safetensors file. The C++ tests check
that meshlm's decoder and sampler reproduce them token for token.

    .venv/bin/python tools/reference/hf_generate_reference.py \
        --out tests/fixtures/hf_generate_tiny.safetensors

See tools/reference/README.md for the fixture's contents.
"""

import argparse

import numpy as np
import torch
import transformers
from safetensors.numpy import save_file, load_file

# 36 wide with 3 heads: head dim 12 and widths that are not multiples of 16 exercise the
# kernels' tails. The model stays under ~40K parameters so the fixture stays small.
CFG = dict(n_layer=2, n_embd=36, n_head=3, vocab_size=96, n_positions=48)
PROMPT_LENGTHS = (5, 11)
MAX_NEW_TOKENS = 30
REPETITION_PENALTY = 1.3


def build_model(seed):
    torch.manual_seed(seed)
    config = transformers.GPT2Config(**CFG, activation_function="gelu_new",
                                     layer_norm_epsilon=1e-5, resid_pdrop=0.0, embd_pdrop=0.0,
                                     attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)
    model = transformers.GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith("lm_head"):
                continue  # tied to wte
            if "ln_" in name and name.endswith(".weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn_like(p))
            else:
                # Wider than GPT-2's 0.02 so logits are spread out and greedy choices are clear.
                p.copy_(0.15 * torch.randn_like(p))
    # No end-of-text: every generation runs its full length.
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model


def meshlm_params(model):
    """meshlm names and layout: HF Conv1D weights are [in, out], meshlm stores [out, in]."""
    sd = {k.removeprefix("transformer."): v.detach().numpy().astype(np.float32)
          for k, v in model.state_dict().items() if k.startswith("transformer.")}
    out = {}
    for name, value in sd.items():
        if name.endswith(".attn.bias") or name.endswith(".attn.masked_bias"):
            continue  # causal-mask buffers in older versions
        is_conv1d = any(name.endswith(s) for s in
                        ("c_attn.weight", "c_proj.weight", "c_fc.weight"))
        out["param." + name] = np.ascontiguousarray(value.T if is_conv1d else value)
    return out


def greedy(model, prompt, **kw):
    ids = torch.tensor([prompt])
    res = model.generate(ids, do_sample=False, max_new_tokens=MAX_NEW_TOKENS,
                         min_new_tokens=MAX_NEW_TOKENS, output_scores=True,
                         return_dict_in_generate=True, use_cache=True, **kw)
    new = res.sequences[0, len(prompt):].numpy().astype(np.int32)
    assert len(new) == MAX_NEW_TOKENS
    # Smallest gap between the chosen and the runner-up score (after any penalty): how far
    # float round-off is from flipping a choice.
    gap = min(float(torch.topk(s[0], 2).values.diff().abs()) for s in res.scores)
    return new, gap


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/fixtures/hf_generate_tiny.safetensors")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    torch.set_num_threads(1)
    model = build_model(args.seed)
    gen = torch.Generator().manual_seed(args.seed + 1)
    tensors = meshlm_params(model)
    min_gap = float("inf")
    for i, n in enumerate(PROMPT_LENGTHS):
        prompt = torch.randint(0, CFG["vocab_size"], (n,), generator=gen).tolist()
        plain, gap = greedy(model, prompt)
        min_gap = min(min_gap, gap)
        penalized, gap = greedy(model, prompt, repetition_penalty=REPETITION_PENALTY)
        min_gap = min(min_gap, gap)
        assert not np.array_equal(plain, penalized), "the penalty should change the output"
        tensors[f"prompt_{i}"] = np.array(prompt, dtype=np.int32)
        tensors[f"greedy_{i}"] = plain
        tensors[f"penalty_{i}"] = penalized
        if i == 0:
            # Full-sequence logits of prompt + greedy continuation (no cache).
            full = torch.tensor([prompt + plain.tolist()])
            with torch.no_grad():
                logits = model(full, use_cache=False).logits[0]
            tensors["logits_0"] = logits.numpy().astype(np.float32)
        print(f"prompt {i} ({n} tokens): greedy {plain.tolist()}")
        print(f"  penalty {REPETITION_PENALTY}: {penalized.tolist()}")
    print(f"smallest top-1 / top-2 score gap: {min_gap:.3g}")
    assert min_gap > 1e-3, "a greedy choice is too close to call; try another --seed"

    metadata = dict(n_layer=CFG["n_layer"], d_model=CFG["n_embd"], n_head=CFG["n_head"],
                    vocab_size=CFG["vocab_size"], max_seq_len=CFG["n_positions"], ln_eps=1e-5,
                    num_prompts=len(PROMPT_LENGTHS), max_new_tokens=MAX_NEW_TOKENS,
                    repetition_penalty=REPETITION_PENALTY, min_score_gap=min_gap, seed=args.seed,
                    generator=f"hf_generate_reference.py, torch {torch.__version__}, "
                              f"transformers {transformers.__version__}")
    metadata = {k: str(v) for k, v in metadata.items()}
    save_file(tensors, args.out, metadata=metadata)
    back = load_file(args.out)
    assert all(np.array_equal(back[k], v) for k, v in tensors.items())
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
