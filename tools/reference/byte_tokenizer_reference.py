#!/usr/bin/env python3
"""Reference fixtures for meshlm's byte tokenizer exported as a Hugging Face tokenizer.json
(data/byte_tokenizer_json.h; tests/hf_tokenizer_files_test.cpp).

Run in a venv with HF `tokenizers` (checked with tokenizers 0.23.3, CPython 3.11):

    .venv/bin/python tools/reference/byte_tokenizer_reference.py

Builds the tokenizer with the `tokenizers` API, independently of meshlm: a BPE model without
merges whose vocabulary is the 256 ByteLevel characters (GPT-2's bytes_to_unicode, byte b at id
b), a ByteLevel pre-tokenizer that does not split, a ByteLevel decoder, and "<|endoftext|>" an
added special token at id 256. Writes to tests/fixtures/tokenizers/:

  byte_tokenizer.json  the tokenizer as Tokenizer.save() writes it
  byte.ids             for each line of corpus.txt: HF's encode(line).ids, space-separated, with
                       special tokens not matched (encode_special_tokens, which the exported
                       tokenizer_config.json's split_special_tokens turns on in transformers);
                       a line that is not valid UTF-8 (HF only encodes Unicode strings) is "-"

Before writing it asserts what makes the tokenizer meshlm's: every valid line encodes to its UTF-8
bytes and decodes back to itself, every line's bytes (invalid ones included) decode to Python's
bytes.decode("utf-8", "replace") (both substitute U+FFFD per maximal invalid subsequence), and
the literal "<|endoftext|>" is 13 byte tokens with encode_special_tokens and id 256 without.
"""
import pathlib

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

EOT = "<|endoftext|>"
FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "tokenizers"


def bytes_to_unicode():
    printable = [b for b in range(256) if 33 <= b <= 126 or 161 <= b <= 172 or b >= 174]
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def byte_tokenizer():
    chars = bytes_to_unicode()
    tok = Tokenizer(models.BPE(vocab={chars[b]: b for b in range(256)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(EOT, special=True, normalized=False)])
    return tok


def check(tok, lines):
    for raw in lines:
        ids = list(raw)
        assert tok.decode(ids) == raw.decode("utf-8", "replace"), raw
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        assert tok.encode(text).ids == ids, raw
    assert tok.encode(EOT).ids == list(EOT.encode())
    tok.encode_special_tokens = False
    assert tok.encode("a" + EOT).ids == [97, 256]
    assert tok.decode([97, 256], skip_special_tokens=True) == "a"
    tok.encode_special_tokens = True


def main():
    tok = byte_tokenizer()
    tok.encode_special_tokens = True
    lines = (FIXTURES / "corpus.txt").read_bytes().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    check(tok, lines)
    tok.save(str(FIXTURES / "byte_tokenizer.json"))
    rows = ["# HF tokenizers encode(line).ids for byte_tokenizer.json (encode_special_tokens); "
            "'-': not UTF-8"]
    for raw in lines:
        try:
            rows.append(" ".join(map(str, tok.encode(raw.decode("utf-8")).ids)))
        except UnicodeDecodeError:
            rows.append("-")
    (FIXTURES / "byte.ids").write_text("\n".join(rows) + "\n")
    print(f"wrote byte_tokenizer.json and byte.ids ({len(lines)} lines) to {FIXTURES}")


main()
