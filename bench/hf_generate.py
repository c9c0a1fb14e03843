#!/usr/bin/env python3
"""transformers' generate on a randomly initialized GPT-2 (GPT-2 small by default), greedy or
sampled (--temperature > 0: do_sample with that temperature and --top-p, top_k off): the peer of
bench/generate_bench.cpp. fp32, KV cache (use_cache=True), no network: the model is built from a
config. Prints the best tokens/s over --reps runs, prompt pass included."""

import argparse
import time

import torch
import transformers


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=256)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--width", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--ctx", type=int, default=1024)
    ap.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    ap.add_argument("--top-p", type=float, default=1.0)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(1234)
    config = transformers.GPT2Config(n_layer=args.layers, n_embd=args.width, n_head=args.heads,
                                     vocab_size=args.vocab, n_positions=args.ctx)
    model = transformers.GPT2LMHeadModel(config).eval()
    model.generation_config.eos_token_id = None  # always generate --new tokens
    model.generation_config.pad_token_id = 0
    prompt = torch.randint(0, args.vocab, (1, args.prompt))
    kw = dict(do_sample=False, use_cache=True)
    if args.temperature > 0:
        kw.update(do_sample=True, temperature=args.temperature, top_p=args.top_p, top_k=0)
    with torch.inference_mode():
        model.generate(prompt, max_new_tokens=8, min_new_tokens=8, **kw)  # warm-up
        best = 0.0
        for _ in range(args.reps):
            t0 = time.perf_counter()
            out = model.generate(prompt, max_new_tokens=args.new, min_new_tokens=args.new, **kw)
            dt = time.perf_counter() - t0
            n = out.shape[1] - args.prompt
            assert n == args.new
            best = max(best, n / dt)
            print(f"transformers fp32 threads={args.threads} prompt={args.prompt} new={n} "
                  f"temperature={args.temperature:g} top_p={args.top_p:g}: "
                  f"{n / dt:.2f} tokens/s", flush=True)
    print(f"best transformers {best:.2f} tokens/s (torch {torch.__version__}, "
          f"transformers {transformers.__version__})")


if __name__ == "__main__":
    main()
