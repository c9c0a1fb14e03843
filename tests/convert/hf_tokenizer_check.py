"""An HF export of a meshlm run, loaded with transformers' AutoTokenizer: its special tokens, and
its ids and text on every line of tests/fixtures/tokenizers/corpus.txt (multilingual, emoji, CJK,
invalid UTF-8) against meshlm's own encoder and decoder (`meshlm tokenize`), and its chat template
against the prompt `meshlm serve` gives the run (ChatML when the run has no template).

Usage: hf_tokenizer_check.py EXPORT_DIR MESHLM TOKENIZER_SPEC CORPUS EOT_TEXT EOT_ID
(TOKENIZER_SPEC: what `meshlm tokenize --tokenizer` takes for the run's tokenizer)"""
import subprocess
import sys

import transformers
from transformers import AutoTokenizer

transformers.logging.set_verbosity_error()  # not the warning of a corpus longer than the context

export, meshlm, spec, corpus, eot, eot_id = sys.argv[1:7]
eot_id = int(eot_id)
failures = []


def check(what, got, want):
    if got != want:
        failures.append(f"{what}: got {got!r}, want {want!r}")


def meshlm_ids(lines):
    out = subprocess.run([meshlm, "tokenize", "--tokenizer", spec], input=b"\n".join(lines) + b"\n",
                         capture_output=True, check=True).stdout
    return [[int(t) for t in row.split()] for row in out.decode().split("\n")[:len(lines)]]


def meshlm_text(rows):
    stdin = "\n".join(" ".join(map(str, r)) for r in rows).encode() + b"\n"
    out = subprocess.run([meshlm, "tokenize", "--tokenizer", spec, "--decode"], input=stdin,
                         capture_output=True, check=True).stdout
    return out.split(b"\n")[:len(rows)]


tok = AutoTokenizer.from_pretrained(export)
for name in ("bos", "eos", "pad"):
    check(f"{name}_token", getattr(tok, name + "_token"), eot)
    check(f"{name}_token_id", getattr(tok, name + "_token_id"), eot_id)

lines = [l for l in open(corpus, "rb").read().split(b"\n") if l]
lines.append(f"typed {eot} stays text".encode())
want_ids = meshlm_ids(lines)
want_text = meshlm_text(want_ids)
checked = invalid = 0
for raw, ids, text in zip(lines, want_ids, want_text):
    if spec == "byte":  # it keeps every byte; a BPE tokenizer drops special tokens typed in text
        check(f"meshlm decode of {raw!r}", text, raw)
    # What transformers decodes: meshlm's bytes, invalid UTF-8 as U+FFFD.
    check(f"decode {raw!r}", tok.decode(ids, skip_special_tokens=True),
          text.decode("utf-8", "replace"))
    try:
        s = raw.decode("utf-8")
    except UnicodeDecodeError:
        invalid += 1  # transformers encodes only Unicode strings
        continue
    check(f"encode {s!r}", tok(s, add_special_tokens=True)["input_ids"], ids)
    checked += 1
# The end of text separates documents and decodes to nothing with skip_special_tokens.
check("eot decode", tok.decode(want_ids[0] + [eot_id] + want_ids[1], skip_special_tokens=True),
      lines[0].decode() + lines[1].decode())

msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi 😀"}]
chatml = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi 😀<|im_end|>\n" \
         "<|im_start|>assistant\n"
check("apply_chat_template", tok.apply_chat_template(msgs, add_generation_prompt=True,
                                                     tokenize=False), chatml)

print(f"{checked} lines encoded and {checked + invalid} decoded alike ({invalid} not UTF-8); "
      f"special tokens {tok.bos_token!r}/{tok.eos_token!r}/{tok.pad_token!r}")
for f in failures[:20]:
    print("FAIL", f)
print(f"{0 if failures else 1} passed, {1 if failures else 0} failed")
sys.exit(1 if failures else 0)
