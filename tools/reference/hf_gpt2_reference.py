#!/usr/bin/env python3
"""Fixtures for meshlm's Hugging Face GPT-2 import/export, computed by `transformers` itself.

  import  tests/fixtures/hf_gpt2_tiny/                 a tiny random GPT2LMHeadModel
          (save_pretrained: config.json, generation_config.json, model.safetensors)
          tests/fixtures/hf_gpt2_tiny_logits.safetensors
          (token ids and transformers' fp32 logits on them)
  export  tests/fixtures/meshlm_tiny_run/              a tiny meshlm run (config.yaml,
          model.safetensors) trained by build/meshlm train (--retrain; else reused)
          tests/fixtures/meshlm_tiny_run_hf_logits.safetensors
          (logits of GPT2LMHeadModel.from_pretrained on `meshlm convert --to hf` of that run,
          and the sha256 of the exported model.safetensors transformers loaded)

Run from the repository root with the reference venv (tools/reference/setup_venv.sh):
  .venv/bin/python tools/reference/hf_gpt2_reference.py [import] [export] [--retrain]
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file
from transformers import GPT2Config, GPT2LMHeadModel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
MESHLM = os.path.join(ROOT, "build", "meshlm")


def logits_of(model, ids):
    model.eval()
    with torch.no_grad():
        return model(input_ids=ids).logits.float().contiguous()


def make_import_fixture(seed):
    torch.manual_seed(seed)
    cfg = GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=300, n_positions=32,
                     bos_token_id=299, eos_token_id=299)
    model = GPT2LMHeadModel(cfg)
    # Every parameter random and non-trivial (LayerNorm gains away from 1, biases away from 0),
    # with scales that give O(1) logits and peaked attention, so a misplaced transpose,
    # q/k/v split or bias shows up far above the tolerance.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if re.search(r"ln_\w+\.weight$", name):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn_like(p))
            elif name.endswith("wte.weight"):
                p.copy_(0.5 * torch.randn_like(p))
            else:
                p.copy_(0.2 * torch.randn_like(p))
    out = os.path.join(FIXTURES, "hf_gpt2_tiny")
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out)
    # Reload from disk: the logits are those of what the fixture directory holds.
    model = GPT2LMHeadModel.from_pretrained(out)
    g = torch.Generator().manual_seed(seed + 1)
    ids = torch.randint(0, cfg.vocab_size, (2, 16), generator=g)
    logits = logits_of(model, ids)
    save_file({"tokens": ids.to(torch.int32), "logits": logits},
              os.path.join(FIXTURES, "hf_gpt2_tiny_logits.safetensors"),
              metadata={"transformers": __import__("transformers").__version__,
                        "torch": torch.__version__})
    print(f"import fixture: {out}, logits {tuple(logits.shape)}, max |logit| "
          f"{logits.abs().max():.3f}")


def retrain_tiny_run():
    run = os.path.join(FIXTURES, "meshlm_tiny_run")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([MESHLM, "train", "--config",
                        os.path.join(ROOT, "tools", "reference", "meshlm_tiny_run.yaml"),
                        f"--config.log.dir={tmp}/run", f"--config.data.cache_dir={tmp}/cache"],
                       check=True, env=dict(os.environ, OMP_WAIT_POLICY="PASSIVE"))
        shutil.rmtree(run, ignore_errors=True)
        os.makedirs(run)
        # Drop the temporary paths: the committed config must not point into /tmp.
        text = open(f"{tmp}/run/config.yaml").read()
        text = re.sub(r'(\n  (?:cache_dir|dir): )"[^"\n]*"', r'\1""', text)
        open(os.path.join(run, "config.yaml"), "w").write(text)
        shutil.copy(f"{tmp}/run/model.safetensors", run)
    print(f"retrained {run}")


def sha256(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def make_export_fixture(seed):
    run = os.path.join(FIXTURES, "meshlm_tiny_run")
    with tempfile.TemporaryDirectory() as tmp:
        hf = os.path.join(tmp, "hf")
        subprocess.run([MESHLM, "convert", "--from", "meshlm", "--to", "hf", run, hf], check=True)
        digest = sha256(os.path.join(hf, "model.safetensors"))
        model, info = GPT2LMHeadModel.from_pretrained(hf, output_loading_info=True)
        bad = {k: v for k, v in info.items() if v}
        if bad:
            sys.exit(f"transformers did not load the export cleanly: {bad}")
        # The run's weights, read by safetensors, must be what transformers now holds
        # (Conv1D weights transposed, the head tied to wte).
        mine = load_file(os.path.join(run, "model.safetensors"))
        sd = model.state_dict()
        for name, t in mine.items():
            theirs = sd["transformer." + name]
            if re.search(r"(c_attn|c_proj|c_fc)\.weight$", name):
                theirs = theirs.t()
            assert torch.equal(theirs, t), name
        assert torch.equal(sd["lm_head.weight"], mine["wte.weight"])
        # The bf16 export must be torch's own round-to-nearest-even of the f32 export.
        hf16 = os.path.join(tmp, "hf16")
        subprocess.run([MESHLM, "convert", "--from", "meshlm", "--to", "hf", "--dtype", "bf16",
                        run, hf16], check=True)
        f32, b16 = (load_file(os.path.join(d, "model.safetensors")) for d in (hf, hf16))
        for name, t in f32.items():
            assert torch.equal(b16[name], t.to(torch.bfloat16)), name
        g = torch.Generator().manual_seed(seed + 2)
        ids = torch.randint(0, model.config.vocab_size, (2, 16), generator=g)
        logits = logits_of(model, ids)
        save_file({"tokens": ids.to(torch.int32), "logits": logits},
                  os.path.join(FIXTURES, "meshlm_tiny_run_hf_logits.safetensors"),
                  metadata={"model_sha256": digest,
                            "transformers": __import__("transformers").__version__,
                            "torch": torch.__version__})
    print(f"export fixture: sha256 {digest}, logits {tuple(logits.shape)}, max |logit| "
          f"{logits.abs().max():.3f}; bf16 export equals torch's rounding")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", nargs="*", help="import and/or export (default: both)")
    ap.add_argument("--retrain", action="store_true",
                    help="retrain tests/fixtures/meshlm_tiny_run with build/meshlm first")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    args.what = args.what or ["import", "export"]
    if set(args.what) - {"import", "export"}:
        ap.error("what: import and/or export")
    torch.set_num_threads(1)
    if "import" in args.what:
        make_import_fixture(args.seed)
    if args.retrain or not os.path.exists(os.path.join(FIXTURES, "meshlm_tiny_run")):
        retrain_tiny_run()
    if "export" in args.what:
        make_export_fixture(args.seed)


if __name__ == "__main__":
    main()
