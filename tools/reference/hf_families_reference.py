#!/usr/bin/env python3
"""Hugging Face checkpoints of four model families for meshlm's import (fixture generator).

Builds tiny GPT-J, Llama (GQA, llama3 RoPE scaling), Mistral (GQA) and Qwen2 (GQA, q/k/v
biases, tied head) models with `transformers` from configs (random weights, no hub access),
writes each with save_pretrained (safetensors) and stores what transformers computes with it:

  tests/fixtures/hf_<family>_tiny/               config.json, generation_config.json,
                                                 model.safetensors
  tests/fixtures/hf_llama_tiny_sharded/          the same Llama weights in 3 shards
                                                 (model.safetensors.index.json), config.json in
                                                 the hub's older rope_theta / rope_scaling form
  tests/fixtures/hf_llama_tiny_f16/               the Llama weights as float16 (llama_f16)
  tests/fixtures/hf_llama_tiny_f16_ref.safetensors  its tokens and float32 logits
  tests/fixtures/hf_<family>_tiny_ref.safetensors
      tokens  I32 [2, 16]       a seeded batch
      logits  F32 [2, 16, V]    the reloaded model's fp32 logits on it
      prompt  I32 [1, 8]        a seeded prompt
      greedy  I32 [1, 72]       prompt + 64 tokens of model.generate(do_sample=False,
                                max_new_tokens=64, min_new_tokens=64) (KV cache)

Run from the repository root with the reference venv (tools/reference/setup_venv.sh):

    .venv/bin/python tools/reference/hf_families_reference.py [gptj llama mistral qwen2]

tools/reference/hf_load_check.py checks a directory (e.g. one written by meshlm's exporter)
against a *_ref.safetensors file. See tools/reference/README.md.
"""

import argparse
import json
import math
import os
import sys
import re
import shutil
import struct

import numpy as np
import torch
import transformers
from safetensors.numpy import load_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # transformer_reference

V = 97
PROMPT_LEN, NEW_TOKENS = 8, 64
BATCH, SEQ = 2, 16
# Special ids written into config.json. Generation runs with min_new_tokens = max_new_tokens,
# and the script asserts that the greedy output never contains EOS either, so a consumer
# that stops at EOS still produces all 64 tokens.
BOS, EOS, PAD = 1, 2, 0
IDS = dict(bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD)
LLAMA_ROPE = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
              "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              # 64, not 32: with head_dim 16 and theta 5e5 the wavelengths are 6.3, 32.4, 167,
              # ...; at 32 no frequency would fall in the smoothed band (8 <= wavelen <= 32).
              # At 64 the bands are: i = 0 kept (< 16), i = 1 smoothed, i >= 2 divided by 8.
              "original_max_position_embeddings": 64}
GQA = dict(vocab_size=V, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
           intermediate_size=96, num_hidden_layers=2, rms_norm_eps=1e-5, hidden_act="silu",
           max_position_embeddings=128, attention_dropout=0.0, **IDS)


def configs():
    return {
        # n_positions 128 (not 64): GPT-J's sinusoid table has n_positions rows and the
        # greedy sequence is 8 + 64 = 72 long.
        "gptj": (transformers.GPTJConfig(vocab_size=V, n_positions=128, n_embd=64, n_layer=2,
                                         n_head=4, rotary_dim=8, n_inner=None,
                                         activation_function="gelu_new",
                                         layer_norm_epsilon=1e-5, tie_word_embeddings=False,
                                         resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                         **IDS),
                 transformers.GPTJForCausalLM),
        "llama": (transformers.LlamaConfig(**GQA, tie_word_embeddings=False,
                                           rope_parameters=dict(LLAMA_ROPE)),
                  transformers.LlamaForCausalLM),
        "mistral": (transformers.MistralConfig(**GQA, tie_word_embeddings=False,
                                               sliding_window=None,
                                               rope_parameters={"rope_type": "default",
                                                                "rope_theta": 10000.0}),
                    transformers.MistralForCausalLM),
        "qwen2": (transformers.Qwen2Config(**GQA, tie_word_embeddings=True,
                                           use_sliding_window=False,
                                           rope_parameters={"rope_type": "default",
                                                            "rope_theta": 1000000.0}),
                  transformers.Qwen2ForCausalLM),
    }


def build(family, seed):
    config, cls = configs()[family]
    torch.manual_seed(seed)
    model = cls(config).float().eval()
    # Every parameter random and non-trivial: norm gains 1 + N(0, 0.2), biases N(0, 0.1),
    # embeddings N(0, 0.5), other matrices N(0, 0.15). Logits come out O(1-10) with clear
    # greedy choices, and a misplaced transpose / split / bias shows far above round-off.
    with torch.no_grad():
        for name, p in model.named_parameters():  # a tied head is listed once (embeddings)
            if re.search(r"(norm|ln_\w+|ln_f)\.weight$", name):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn_like(p))
            elif re.search(r"(wte|embed_tokens)\.weight$", name):
                p.copy_(0.5 * torch.randn_like(p))
            else:
                p.copy_(0.15 * torch.randn_like(p))
    gc = model.generation_config
    gc.bos_token_id, gc.eos_token_id, gc.pad_token_id = BOS, EOS, PAD
    gc.do_sample = False
    return model


def logits_of(model, ids):
    with torch.no_grad():
        return model(input_ids=ids, use_cache=False).logits.float()


def generate(model, prompt):
    res = model.generate(prompt, do_sample=False, max_new_tokens=NEW_TOKENS,
                         min_new_tokens=NEW_TOKENS, output_scores=True,
                         return_dict_in_generate=True, use_cache=True)
    seq = res.sequences
    assert seq.shape == (1, PROMPT_LEN + NEW_TOKENS), seq.shape
    new = seq[0, PROMPT_LEN:]
    # Does the cached generation agree with argmax of one uncached pass over the sequence?
    # (It does not where min_new_tokens' EOS mask changed a choice.)
    full = logits_of(model, seq)[0, PROMPT_LEN - 1:-1]
    agrees = torch.equal(full.argmax(-1), new)
    gap = min(float(s[0].topk(2).values.diff().abs()) for s in res.scores)
    return seq, gap, agrees


def llama3_inv_freq(rp, dim):
    """Llama 3 RoPE frequencies, float64: keep wavelengths below orig / high_freq_factor,
    divide by `factor` above orig / low_freq_factor, blend linearly in between."""
    inv = rp["rope_theta"] ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    orig, lo, hi, factor = (rp["original_max_position_embeddings"], rp["low_freq_factor"],
                            rp["high_freq_factor"], rp["factor"])
    wavelen = 2 * math.pi / inv
    smooth = ((orig / wavelen - lo) / (hi - lo)).clamp(0.0, 1.0)
    return (1 - smooth) * inv / factor + smooth * inv


def crosscheck(family, model, tokens, logits):
    """The checkpoint in meshlm's layout through transformer_reference.py's independent
    float64 model: max |difference| of the logits (transformers computes in fp32)."""
    import transformer_reference as tr
    sd = {k: v.detach().double() for k, v in model.state_dict().items()}
    c = model.config
    p, cfg = {}, dict(tr.BASE, n_layer=2, vocab_size=V, max_seq_len=128, d_ff=0)
    if family == "gptj":
        cfg.update(d_model=c.n_embd, n_head=c.n_head, n_kv_head=c.n_head, block="parallel",
                   position="rope", rope_dim=c.rotary_dim, rope_style="interleaved",
                   qkv_bias=False, proj_bias=False, tied_head=False, head_bias=True)
        p["wte.weight"] = sd["transformer.wte.weight"]
        for l in range(2):
            a, b = f"h.{l}.", f"transformer.h.{l}."
            p[a + "attn.c_attn.weight"] = torch.cat([sd[b + f"attn.{x}_proj.weight"]
                                                     for x in "qkv"])
            p[a + "attn.c_proj.weight"] = sd[b + "attn.out_proj.weight"]
            for x in ("weight", "bias"):
                p[a + "ln_1." + x] = sd[b + "ln_1." + x]
                p[a + "mlp.c_fc." + x] = sd[b + "mlp.fc_in." + x]
                p[a + "mlp.c_proj." + x] = sd[b + "mlp.fc_out." + x]
        for x in ("weight", "bias"):
            p["ln_f." + x] = sd["transformer.ln_f." + x]
            p["lm_head." + x] = sd["lm_head." + x]
    else:
        qkv_bias = family == "qwen2"
        rp = c.rope_parameters
        cfg.update(d_model=c.hidden_size, n_head=c.num_attention_heads,
                   n_kv_head=c.num_key_value_heads, norm="rmsnorm", norm_bias=False,
                   norm_eps=c.rms_norm_eps, position="rope", rope_style="half",
                   rope_base=rp["rope_theta"], qkv_bias=qkv_bias, proj_bias=False,
                   mlp_bias=False, mlp="swiglu", d_ff=c.intermediate_size,
                   tied_head=c.tie_word_embeddings)
        if rp["rope_type"] == "llama3":
            cfg["inv_freq"] = llama3_inv_freq(rp, c.hidden_size // c.num_attention_heads)
        p["wte.weight"] = sd["model.embed_tokens.weight"]
        for l in range(2):
            a, b = f"h.{l}.", f"model.layers.{l}."
            for x in (("weight", "bias") if qkv_bias else ("weight",)):
                p[a + "attn.c_attn." + x] = torch.cat([sd[b + f"self_attn.{y}_proj.{x}"]
                                                       for y in "qkv"])
            p[a + "attn.c_proj.weight"] = sd[b + "self_attn.o_proj.weight"]
            p[a + "ln_1.weight"] = sd[b + "input_layernorm.weight"]
            p[a + "ln_2.weight"] = sd[b + "post_attention_layernorm.weight"]
            p[a + "mlp.c_fc.weight"] = torch.cat([sd[b + "mlp.gate_proj.weight"],
                                                  sd[b + "mlp.up_proj.weight"]])
            p[a + "mlp.c_proj.weight"] = sd[b + "mlp.down_proj.weight"]
        p["ln_f.weight"] = sd["model.norm.weight"]
        if not c.tie_word_embeddings:
            p["lm_head.weight"] = sd["lm_head.weight"]
    assert set(p) == {n for n, _ in tr.param_shapes(cfg)}, set(p) ^ {n for n, _ in
                                                                    tr.param_shapes(cfg)}
    with torch.no_grad():
        ours = tr.forward(cfg, p, tokens)
    err = (ours - logits.double()).abs().max().item()
    assert err <= 1e-4, (family, "float64 reference", err)
    return err


def pick_prompt(model, g):
    """The first seeded prompt whose greedy continuation has no EOS, is the plain argmax
    at every step (EOS never was the top choice) and has no choice within 1e-3 of its
    runner-up (float round-off elsewhere could flip it)."""
    for _ in range(50):
        prompt = torch.randint(0, V, (1, PROMPT_LEN), generator=g)
        if EOS in prompt.tolist()[0]:
            continue
        seq, gap, agrees = generate(model, prompt)
        if agrees and gap > 1e-3 and EOS not in seq[0, PROMPT_LEN:].tolist():
            return prompt, seq, gap
    raise SystemExit("no clear-cut prompt found; try another --seed")


def save_safetensors(path, tensors, metadata):
    """Byte-deterministic safetensors writer (the safetensors package orders the metadata
    differently from run to run): header in insertion order, data 8-byte aligned."""
    dtypes = {np.dtype("<f4"): "F32", np.dtype("<i4"): "I32"}
    header, offset = {"__metadata__": metadata}, 0
    for name, a in tensors.items():
        header[name] = {"dtype": dtypes[a.dtype], "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for a in tensors.values():
            f.write(np.ascontiguousarray(a).tobytes())


def to_legacy_rope(path):
    """Rewrite config.json's rope_parameters as the hub's rope_theta + rope_scaling."""
    with open(path) as f:
        cfg = json.load(f)
    rp = cfg.pop("rope_parameters")
    cfg["rope_theta"] = rp.pop("rope_theta")
    cfg["rope_scaling"] = rp
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def make(family, seed):
    model = build(family, seed)
    out = os.path.join(FIXTURES, f"hf_{family}_tiny")
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out)
    # Everything below comes from the checkpoint as transformers reloads it.
    cls = configs()[family][1]
    model, info = cls.from_pretrained(out, output_loading_info=True)
    assert not any(info.values()), info
    model.eval()
    g = torch.Generator().manual_seed(seed + 1)
    tokens = torch.randint(0, V, (BATCH, SEQ), generator=g)
    logits = logits_of(model, tokens)
    # The same logits from the float64 reference of tools/reference/transformer_reference.py,
    # on the prompt + greedy sequence too (72 positions, past original_max_position_embeddings).
    err = crosscheck(family, model, tokens, logits)
    prompt, greedy, gap = pick_prompt(model, g)
    err = max(err, crosscheck(family, model, greedy, logits_of(model, greedy)))

    if family == "llama":
        sharded = os.path.join(FIXTURES, "hf_llama_tiny_sharded")
        shutil.rmtree(sharded, ignore_errors=True)
        model.save_pretrained(sharded, max_shard_size="120KB")
        to_legacy_rope(os.path.join(sharded, "config.json"))
        shards = [f for f in os.listdir(sharded) if re.match(r"model-\d+-of-\d+\.safetensors$", f)]
        assert 2 <= len(shards) <= 3, shards
        again = cls.from_pretrained(sharded).eval()
        assert again.config.rope_parameters == model.config.rope_parameters
        assert torch.equal(logits_of(again, tokens), logits), "sharded copy differs"
        print(f"  sharded: {sorted(shards)}")

    ref = os.path.join(FIXTURES, f"hf_{family}_tiny_ref.safetensors")
    tensors = {"tokens": tokens.numpy().astype("<i4"),
               "logits": logits.numpy().astype("<f4"),
               "prompt": prompt.numpy().astype("<i4"),
               "greedy": greedy.numpy().astype("<i4")}
    save_safetensors(ref, tensors, {"transformers": transformers.__version__,
                                    "torch": torch.__version__, "family": family,
                                    "seed": str(seed), "min_score_gap": f"{gap:.4g}"})
    back = load_file(ref)
    assert all(np.array_equal(back[k], v) for k, v in tensors.items())
    n = sum(p.numel() for p in model.parameters())
    print(f"{family}: {n} params, max |logit| {logits.abs().max():.2f}, greedy gap {gap:.3g}, "
          f"float64 reference within {err:.2g}")
    print(f"  greedy {greedy[0, PROMPT_LEN:].tolist()}")


def make_f16(seed):
    """The Llama fixture's weights as float16, the dtype many hub checkpoints are stored in:
    model.half() rounds each weight to nearest even. The logits are transformers' on that
    checkpoint loaded as float32 (the exact widening meshlm's import does)."""
    out = os.path.join(FIXTURES, "hf_llama_tiny_f16")
    shutil.rmtree(out, ignore_errors=True)
    build("llama", seed).half().save_pretrained(out)
    cls = configs()["llama"][1]
    model, info = cls.from_pretrained(out, dtype=torch.float32, output_loading_info=True)
    assert not any(info.values()), info
    model.eval()
    assert all(p.dtype == torch.float32 for p in model.parameters())
    g = torch.Generator().manual_seed(seed + 1)
    tokens = torch.randint(0, V, (BATCH, SEQ), generator=g)
    logits = logits_of(model, tokens)
    full = logits_of(build("llama", seed), tokens)
    ref = os.path.join(FIXTURES, "hf_llama_tiny_f16_ref.safetensors")
    tensors = {"tokens": tokens.numpy().astype("<i4"), "logits": logits.numpy().astype("<f4")}
    save_safetensors(ref, tensors, {"transformers": transformers.__version__,
                                    "torch": torch.__version__, "family": "llama",
                                    "dtype": "float16", "seed": str(seed)})
    print(f"llama f16: max |logit| {logits.abs().max():.2f}, "
          f"max |change| from the float32 weights' logits {(logits - full).abs().max():.3g}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("family", nargs="*",
                    help="gptj llama mistral qwen2 llama_f16 (default: all)")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    families = args.family or list(configs()) + ["llama_f16"]
    if set(families) - set(configs()) - {"llama_f16"}:
        ap.error(f"families: {' '.join(configs())} llama_f16")
    torch.set_num_threads(1)
    transformers.utils.logging.disable_progress_bar()
    for family in families:
        if family == "llama_f16":
            make_f16(args.seed)
        else:
            make(family, args.seed)


if __name__ == "__main__":
    main()
