#!/usr/bin/env python3
"""Reference fixtures for meshlm's byte-level BPE tokenizer (tests/bpe_tokenizer_test.cpp).

Run in a venv with HF `tokenizers` and `tiktoken` (checked with tokenizers 0.23.3, tiktoken
0.14.0, CPython 3.11):

    python3 -m venv .venv && .venv/bin/pip install tokenizers tiktoken
    .venv/bin/pip download --no-deps openai-whisper -d /tmp/whl   # sdist; no torch needed
    .venv/bin/python tools/reference/tokenizer_reference.py \
        --gpt2-tiktoken /tmp/whl/openai_whisper-*/whisper/assets/gpt2.tiktoken

(`tar xzf` the sdist first; the script also accepts the .tar.gz and reads the member.)

Writes to tests/fixtures/tokenizers/:
  corpus.txt                 varied test lines, '\n'-separated, raw bytes (some invalid UTF-8)
  bpe_merges_legacy.json     HF byte-level BPE trained here, merges as "a b" strings
  bpe_merges_pairs.json      the same model, merges as ["a", "b"] pairs
  bpe_split_sequence.json    same model, pre_tokenizer Sequence[Split(GPT-2 regex), ByteLevel]
  bpe_prefix_space.json      same model, ByteLevel(add_prefix_space=true)
  gpt2.tiktoken              copy of openai-whisper's whisper/assets/gpt2.tiktoken
  *.ids                      expected ids, one line per corpus line (space-separated; an empty
                             line for an empty corpus line), then one last line for the whole
                             corpus encoded as a single string. Lines starting with '#' are
                             comments.

Expected ids come from the libraries themselves: HF `Tokenizer.encode(line).ids` (added tokens
matched, no post-processing) for the JSON files, tiktoken `encode_ordinary` and
`encode(allowed_special={"<|endoftext|>"})` for gpt2.tiktoken.

Invalid UTF-8: both libraries only accept valid Unicode strings (Rust &str), so neither defines
what an invalid byte does. meshlm treats every byte that does not start a valid (shortest-form,
non-surrogate, <= U+10FFFF) UTF-8 sequence as one code point of its own that is neither \\s,
\\p{L} nor \\p{N}. The reference for such lines is computed the same way through the libraries:
each invalid byte is replaced by a distinct private-use code point (category Co: outside \\s,
\\p{L}, \\p{N}), HF's Split pre-tokenizer (onig) splits the string with the GPT-2 pattern, the
pieces are mapped back to the original bytes and each piece is BPE-encoded by the library's model
(HF `model.tokenize`, tiktoken `_encode_single_piece`). tiktoken has no public find_iter, so its
pieces also come from HF's Split; on every valid line the script asserts that this path gives
exactly tiktoken's encode / encode_ordinary ids.
"""
import argparse
import base64
import json
import pathlib
import tarfile

import tiktoken
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

GPT2_PAT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
EOT = "<|endoftext|>"
PUA = 0xF0000  # invalid byte b -> chr(PUA + b) (plane 15 private use: category Co)


def corpus_lines():
    lines = [
        "Hello world! This is a simple test of the tokenizer.",
        "The quick brown fox jumps over the lazy dog; it's 3:45pm.",
        "  hello",
        "x  \t  y   ",
        "trailing spaces   ",
        "\ttab\t\tseparated\tvalues\t",
        "",
        "   ",
        "don't won't I'm you're we've they'll he'd it's 'S 'T DON'T",
        "''s '''t 's't'll",
        "123abc 4567 89.10 1,000,000 3.14159 0x1F -42 +7e10",
        "١٢٣ ٤٥ Ⅻ ½ ² 𝟙𝟚",
        "Café naïve résumé coöperate Ångström façade jalapeño",
        "Ünïcödé ÀÉÎÕÜ ÿ Œuvre ß straße İstanbul",
        "日本語のテキスト、中文文本。한국어 텍스트",
        "Emoji: 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️",
        "Ελληνικά κείμενο και Русский текст и עִברִית وعربي",
        "def f(x):\n    return x**2 + 1  # comment",
        "    if (a && b) { return c->d[i] << 2; }",
        "for i in range(10): print(f\"{i:>4}\")",
        "#include <stdio.h>\nint main(void) { printf(\"hi\\n\"); }",
        "a\u00a0b c\u2003d e\u3000f g\u200bh",
        "x  \n\n y",
        "line one\r\nline two\r\n",
        "!!!??? ... --- *** ### $$$ %%% ^^^ &&& ~~~",
        "mixed123numbers456and789letters",
        "<|endoftext|>",
        "before<|endoftext|>after",
        "text <|endoftext|> more text<|endoftext|><|endoftext|>",
        "<|endoftext",
        "   leading and trailing   \t",
        "\u0085next line\u2028line sep\u2029para sep\x0bvt\x0cff\x1cfs",
        "ЁЖЗ ёжз ΆΈΉ ά έ ή ﬁ ﬂ Ⓐ ⓐ",
        "combining: e\u0301 a\u0308 n\u0303 \u0301alone",
    ]
    out = [s.encode("utf-8") for s in lines]
    out += [
        b"invalid \xff byte",
        b"\x80\x81\x82 continuation bytes",
        b"truncated \xe2\x82 sequence",
        b"overlong \xc0\xaf and \xe0\x80\xaf",
        b"surrogate \xed\xa0\x80 here",
        b"too big \xf4\x90\x80\x80 end",
        b"mix \xffword \xfe 12\xfd34 \xc3",
        b"  \xff  \xfe\n",
        b"caf\xc3\xa9\xff\xe9",
        # Pieces longer than 128 bytes (meshlm's heap-based merge path).
        b"abcde" * 40 + b" " + b"x" * 300 + b" " + b" " * 250 + b"end",
        "ünïcödé".encode() * 30 + b"!?" * 80,
    ]
    # One corpus line per text line (newlines inside the strings above make more lines; the
    # last .ids row, the whole corpus as one string, keeps them together).
    return [part for line in out for part in line.split(b"\n")]


def to_pua(b: bytes) -> str:
    """Decode b; every byte that is not part of a valid sequence becomes chr(PUA + byte)."""
    s = b.decode("utf-8", errors="surrogateescape")
    return "".join(chr(PUA + (ord(c) - 0xDC00)) if 0xDC80 <= ord(c) <= 0xDCFF else c for c in s)


def from_pua(s: str) -> bytes:
    out = bytearray()
    for c in s:
        o = ord(c)
        out += bytes([o - PUA]) if PUA + 0x80 <= o <= PUA + 0xFF else c.encode("utf-8")
    return bytes(out)


def train_bpe(lines, extra_text):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1500,
        special_tokens=[EOT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    texts = [l.decode("utf-8", errors="replace") for l in lines] + extra_text
    tok.train_from_iterator(texts, trainer)
    return tok


def hf_ids(tok: Tokenizer, line: bytes):
    try:
        return tok.encode(line.decode("utf-8")).ids
    except UnicodeDecodeError:
        pass
    # Invalid UTF-8: emulate (see module docstring). Split around added tokens first.
    split = pre_tokenizers.Split(Regex(GPT2_PAT), behavior="isolated")
    cfg = json.loads(tok.to_str())
    pts = cfg["pre_tokenizer"]
    prefix = pts.get("type") == "ByteLevel" and pts.get("add_prefix_space")
    ids = []
    text = to_pua(line)
    added = {a["content"]: a["id"] for a in cfg["added_tokens"]}
    parts = [text]
    for content in added:
        parts = [p for q in parts for p in _split_keep(q, content)]
    for p in parts:
        if p in added:
            ids.append(added[p])
        else:
            if prefix and not p.startswith(" "):  # ByteLevel prefixes every split
                p = " " + p
            for piece, _ in split.pre_tokenize_str(p):
                raw = from_pua(piece)
                mapped = "".join(BYTE_TO_CHAR[x] for x in raw)
                ids += [t.id for t in tok.model.tokenize(mapped)]
    return ids


def _split_keep(s, sep):
    out = []
    while True:
        i = s.find(sep)
        if i < 0:
            if s:
                out.append(s)
            return out
        if i:
            out.append(s[:i])
        out.append(sep)
        s = s[i + len(sep) :]


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_TO_CHAR = bytes_to_unicode()


def tiktoken_ids(enc, line: bytes, special: bool):
    if special:
        parts = [p for p in _split_keep(to_pua(line), EOT)]
    else:
        parts = [to_pua(line)]
    try:
        text = line.decode("utf-8")
        ids = enc.encode(text, allowed_special={EOT}) if special else enc.encode_ordinary(text)
        # Cross-check the emulation used for invalid lines on every valid line.
        assert ids == _tiktoken_emulated(enc, parts, special)
        return ids
    except UnicodeDecodeError:
        return _tiktoken_emulated(enc, parts, special)


def _tiktoken_emulated(enc, parts, special):
    # tiktoken exposes no find_iter, so the pieces come from the GPT-2 pattern through HF's Split
    # (onig); r50k's pat_str is documented as equivalent, and the assert in tiktoken_ids checks
    # the whole path against encode/encode_ordinary on every valid line.
    split = pre_tokenizers.Split(Regex(GPT2_PAT), behavior="isolated")
    ids = []
    for p in parts:
        if special and p == EOT:
            ids.append(enc.encode_single_token(p))
            continue
        for piece, _ in split.pre_tokenize_str(p):
            ids += enc._encode_single_piece(from_pua(piece))
    return ids


def write_ids(path, rows, header):
    with open(path, "w") as f:
        f.write(f"# {header}\n")
        for r in rows:
            f.write(" ".join(map(str, r)) + "\n")


def read_gpt2_tiktoken(path):
    p = pathlib.Path(path)
    if p.name.endswith(".tar.gz"):
        with tarfile.open(p) as t:
            for m in t.getmembers():
                if m.name.endswith("whisper/assets/gpt2.tiktoken"):
                    return t.extractfile(m).read()
        raise SystemExit(f"{path}: no whisper/assets/gpt2.tiktoken inside")
    return p.read_bytes()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpt2-tiktoken", required=True)
    ap.add_argument("--out", default="tests/fixtures/tokenizers")
    ap.add_argument("--train-text", default="/usr/share/games/fortunes/computers.u8")
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    lines = corpus_lines()
    corpus = b"\n".join(lines) + b"\n"
    (out / "corpus.txt").write_bytes(corpus)
    all_lines = lines + [corpus]  # last row: the whole corpus as one string

    extra = pathlib.Path(args.train_text).read_text(errors="replace").split("%\n")
    tok = train_bpe(lines, extra)
    cfg = json.loads(tok.to_str())
    merges = cfg["model"]["merges"]
    if merges and isinstance(merges[0], str):
        legacy = merges
        pairs = [m.split(" ") for m in merges]
    else:
        pairs = merges
        legacy = [" ".join(m) for m in merges]
    assert all(" " not in a and " " not in b for a, b in pairs)

    def save(name, mutate):
        c = json.loads(json.dumps(cfg))
        mutate(c)
        (out / name).write_text(json.dumps(c, ensure_ascii=False, indent=1))
        return Tokenizer.from_file(str(out / name))

    def set_merges(m):
        return lambda c: c["model"].__setitem__("merges", m)

    t_legacy = save("bpe_merges_legacy.json", set_merges(legacy))
    t_pairs = save("bpe_merges_pairs.json", set_merges(pairs))

    def seq(c):
        c["model"]["merges"] = pairs
        c["pre_tokenizer"] = {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": GPT2_PAT}, "behavior": "Isolated",
                 "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                 "use_regex": False},
            ],
        }

    t_seq = save("bpe_split_sequence.json", seq)

    def prefix(c):
        c["model"]["merges"] = pairs
        c["pre_tokenizer"]["add_prefix_space"] = True

    t_prefix = save("bpe_prefix_space.json", prefix)

    rows = [hf_ids(t_legacy, l) for l in all_lines]
    assert rows == [hf_ids(t_pairs, l) for l in all_lines]
    assert rows == [hf_ids(t_seq, l) for l in all_lines]
    write_ids(out / "bpe.ids", rows, "HF tokenizers encode(line).ids for bpe_merges_*.json "
              "and bpe_split_sequence.json")
    write_ids(out / "bpe_prefix_space.ids", [hf_ids(t_prefix, l) for l in all_lines],
              "HF tokenizers encode(line).ids for bpe_prefix_space.json")

    raw = read_gpt2_tiktoken(args.gpt2_tiktoken)
    (out / "gpt2.tiktoken").write_bytes(raw)
    ranks = {}
    for ln in raw.splitlines():
        if ln:
            tokb, r = ln.split()
            ranks[base64.b64decode(tokb)] = int(r)
    # tiktoken_ext.openai_public.gpt2 without the network: same ranks, pattern and special.
    enc = tiktoken.Encoding(
        "gpt2",
        explicit_n_vocab=50257,
        pat_str=r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s""",
        mergeable_ranks=ranks,
        special_tokens={EOT: 50256},
    )
    write_ids(out / "gpt2_ordinary.ids", [tiktoken_ids(enc, l, False) for l in all_lines],
              "tiktoken gpt2 encode_ordinary(line)")
    write_ids(out / "gpt2_special.ids", [tiktoken_ids(enc, l, True) for l in all_lines],
              "tiktoken gpt2 encode(line, allowed_special={'<|endoftext|>'})")
    print(f"wrote {out}: {len(lines)} lines, vocab {tok.get_vocab_size()}, merges {len(pairs)}")


if __name__ == "__main__":
    main()
