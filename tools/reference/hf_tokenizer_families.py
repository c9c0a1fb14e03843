#!/usr/bin/env python3
"""Builds, locally with HF `tokenizers` (nothing downloaded), one tokenizer.json per family
configuration that causal LMs on the Hub ship, and records what HF encodes and decodes for a
multilingual corpus. tests/hf_tokenizer_families_test.cpp checks meshlm's HfTokenizer against it.

Each family is trained with a `tokenizers` trainer on the training text (tests/fixtures/tokenizers/
bpe_train_corpus.txt + corpus.txt + the corpus below) with a small vocabulary, in the family's
configuration (normalizer, pre-tokenizer, model options, decoder, post-processor, added tokens).

Writes tests/fixtures/tokenizers/hf/<family>.json and tests/fixtures/tokenizers/hf/expected.json:
  {"lines": [text, ...], "invalid_utf8_hex": [hex, ...],
   "families": {name: [{"ids": [...], "ids_model": [...], "decoded": str}, ... per line]}}
ids: encode(text, add_special_tokens=False); ids_model: encode(text) (the post-processor's
template); decoded: decode(ids) (skip_special_tokens=True). Python strings cannot hold invalid
UTF-8, so those lines (invalid_utf8_hex) carry no HF expectation: the test checks meshlm's own
rule on them (docs/tokenizers-and-data.md).

    .venv/bin/python tools/reference/hf_tokenizer_families.py
"""
import json
import os

from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors, trainers
from tokenizers.models import BPE, Unigram, WordPiece

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests", "fixtures", "tokenizers")
OUT = os.path.join(FIX, "hf")

GPT2_RE = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"
             r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
            r"|\s*[\r\n]+|\s+(?!\S)|\s+")

EXTRA_LINES = [
    "Größenmaßstäbe: Übermäßig schöne Äpfel, Öl und Bäume.",
    "Gro\u0308\u00dfe vs Gr\u00f6\u00dfe; e\u0301 vs \u00e9; A\u030a vs \u00c5 vs \u212b",
    "Zalgo: Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324a\u0310l\u0350g\u0300o",
    "한국어 \u1112\u1161\u11ab\u1100\u1173\u11af vs 한글; 漢字と仮名が混ざった文。",
    "العربية: مرحبا بالعالم! النص من اليمين إلى اليسار ١٢٣",
    "Emoji ZWJ: 👩🏽‍💻 👨‍👨‍👧‍👧 🏳️‍🌈 🧑🏿‍🤝‍🧑🏻 👋🏻👋🏼👋🏽👋🏾👋🏿 🫠",
    "ligatures ﬁ ﬂ ﬃ, fullwidth ＡＢＣ１２３, superscripts x² y³, ① ⅻ, ㎏ ℃ ™",
    "ΑΣ ΟΔΟΣ Σίσυφος İIıi ǅ ǈ ß ẞ K Å",
    "numbers 0 12 345 6789 01234567890 3.14159 1,234,567 ٣٤٥ ४५६",
    "tabs\t\tand\nnewlines\r\n\r\nand  multiple     spaces          here\u00a0nbsp\u3000ideographic",
    "                                                                        long run",
    "\n\n\n\n\t\t\t\t    \n",
    "code: def f(x):\n    return x**2  # it's \"quoted\" and 'single'\n",
    "URL https://example.com/a-b_c?d=1&e=%20 and e-mail a.b+c@d.org",
    "CamelCaseWords and snake_case_words and UPPER'S Contractions YOU'LL WE'VE",
    "Punctuation!!! ??? ... --- ;;; «quotes» „German“ ¿Spanish? ¡Sí! — – …",
    "special tokens in text: <|endoftext|> <s> </s> [CLS] [SEP] <unk> <|im_start|>user",
    "  <|endoftext|>  spaces around  </s>  and <mask>  here",
    "",
    " ",
    "x",
    "Mixed 中文English混合text with123numbers",
    "Hindi हिन्दी, Thai ภาษาไทย, Hebrew עברית, Russian Русский текст.",
    "foo bar foobar barfoo xfoo foo_bar hello world",
]

INVALID_UTF8 = [
    b"bad \xff byte",
    b"truncated \xe2\x82 euro",
    b"\xc0\xaf overlong and lone continuation \x80\x80 end",
    b"surrogate \xed\xa0\x80 and high \xf4\x90\x80\x80",
    b"\xff\xfe\xfd",
    b"caf\xc3 \xa9 split",
]


def read_lines(name, invalid=None):
    """The file's lines; lines that are not valid UTF-8 go to `invalid` (or are dropped)."""
    out = []
    with open(os.path.join(FIX, name), "rb") as f:
        for raw in f.read().split(b"\n"):
            try:
                out.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                if invalid is not None:
                    invalid.append(raw)
    return out


def corpus(invalid):
    lines = read_lines("corpus.txt", invalid) + EXTRA_LINES
    return lines + ["\n".join(lines[:12])]


def train_text():
    return read_lines("bpe_train_corpus.txt") + read_lines("corpus.txt") + EXTRA_LINES * 3


def added(content, special=True, normalized=None, lstrip=False, rstrip=False, single_word=False):
    from tokenizers import AddedToken
    return AddedToken(content, special=special, normalized=(not special) if normalized is None
                      else normalized, lstrip=lstrip, rstrip=rstrip, single_word=single_word)


def byte_level_bpe(tok, vocab_size, specials):
    tok.model = BPE()
    tr = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(train_text(), tr)
    return tok


def gpt2():
    tok = Tokenizer(BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return byte_level_bpe(tok, 800, ["<|endoftext|>"])


def gpt2_prefix_space():
    tok = gpt2()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    return tok


def llama3():
    tok = Tokenizer(BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_RE), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok = byte_level_bpe(tok, 900, ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>",
                                    "<|start_header_id|>", "<|end_header_id|>"])
    j = json.loads(tok.to_str())
    j["model"]["ignore_merges"] = True
    tok = Tokenizer.from_str(json.dumps(j))
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                      special_tokens=[("<|begin_of_text|>", 0)])])
    return tok


def qwen2():
    tok = Tokenizer(BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_RE), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok = byte_level_bpe(tok, 900, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    tok.add_tokens([added("<tool_call>", special=False, normalized=False)])
    return tok


def neox():
    tok = Tokenizer(BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=True)
    tok = byte_level_bpe(tok, 900, ["<|endoftext|>", "<|padding|>"])
    # GPT-NeoX's whitespace-run tokens: added, not special, normalized.
    tok.add_tokens([added(" " * n, special=False, normalized=True) for n in (24, 8, 4, 2)])
    return tok


def sp_bpe(limit_alphabet=120, vocab_size=700):
    """Llama-2 style char BPE: <unk> <s> </s>, 256 <0xXX> tokens, then the trained vocabulary."""
    t = Tokenizer(BPE())
    t.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tr = trainers.BpeTrainer(vocab_size=vocab_size, limit_alphabet=limit_alphabet,
                             show_progress=False)
    t.train_from_iterator(train_text(), tr)
    m = json.loads(t.to_str())["model"]
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for tok_str, _ in sorted(m["vocab"].items(), key=lambda kv: kv[1]):
        vocab.setdefault(tok_str, len(vocab))
    merges = [tuple(x) if isinstance(x, list) else tuple(x.split(" ")) for x in m["merges"]]
    tok = Tokenizer(BPE(vocab, merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.add_special_tokens([added("<unk>"), added("<s>"), added("</s>")])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return tok


def llama2():
    tok = sp_bpe()
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    return tok


def mistral():
    tok = sp_bpe()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first",
                                                 split=False)
    tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Metaspace(
        replacement="▁", prepend_scheme="first", split=False), decoders.Fuse()])
    tok.add_tokens([added("<mask>", special=True, lstrip=True, rstrip=True)])
    return tok


def unigram():
    tok = Tokenizer(Unigram())
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(),
                                           normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)])
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tr = trainers.UnigramTrainer(vocab_size=600, special_tokens=["<pad>", "</s>", "<unk>"],
                                 unk_token="<unk>", show_progress=False, max_piece_length=8)
    tok.train_from_iterator([l for l in train_text() if "😀" not in l and "日" not in l], tr)
    tok.post_processor = processors.TemplateProcessing(single="$A </s>",
                                                       special_tokens=[("</s>", 1)])
    return tok


def unigram_byte_fallback():
    tok = unigram()
    j = json.loads(tok.to_str())
    vocab = j["model"]["vocab"]
    vocab += [[f"<0x{b:02X}>", 0.0] for b in range(256)]
    j["model"]["byte_fallback"] = True
    j["pre_tokenizer"] = json.loads(pre_tokenizers.Metaspace(
        replacement="▁", prepend_scheme="first", split=False).__getstate__())
    j["decoder"] = {"type": "Sequence", "decoders": [
        json.loads(decoders.ByteFallback().__getstate__()),
        json.loads(decoders.Metaspace(prepend_scheme="first").__getstate__()),
        json.loads(decoders.Fuse().__getstate__())]}
    return Tokenizer.from_str(json.dumps(j))


def wordpiece():
    tok = Tokenizer(WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Lowercase(),
                                           normalizers.StripAccents()])
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tr = trainers.WordPieceTrainer(vocab_size=700, special_tokens=[
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False, limit_alphabet=150)
    tok.train_from_iterator(train_text(), tr)
    tok.post_processor = processors.BertProcessing(("[SEP]", 3), ("[CLS]", 2))
    return tok


def misc():
    tok = Tokenizer(BPE(unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([
        normalizers.NFKD(), normalizers.Lowercase(), normalizers.Strip(),
        normalizers.Replace(Regex(r"\s+"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.Punctuation(behavior="isolated")])
    tr = trainers.BpeTrainer(vocab_size=600, special_tokens=["[UNK]", "</s>"], limit_alphabet=80,
                             show_progress=False)
    tok.train_from_iterator(train_text(), tr)
    tok.add_tokens([added("foo", special=False, normalized=True, single_word=True)])
    return tok


def splits():
    tok = Tokenizer(BPE(unk_token="<unk>", fuse_unk=False))
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(" ", behavior="merged_with_next"),
        pre_tokenizers.Split(Regex(r"[.,;!?]+"), behavior="merged_with_previous"),
        pre_tokenizers.Split(Regex(r"\p{L}+"), behavior="contiguous", invert=True),
        pre_tokenizers.Punctuation(behavior="contiguous"),
        pre_tokenizers.Digits(individual_digits=False),
        pre_tokenizers.Split(Regex(r"\p{Han}"), behavior="isolated"),
        pre_tokenizers.Split(Regex(r"q"), behavior="removed"),
        pre_tokenizers.Metaspace(replacement="_", prepend_scheme="never", split=True)])
    tok.decoder = decoders.Sequence([decoders.Replace("_", " "), decoders.Strip(" ", 0, 1)])
    tr = trainers.BpeTrainer(vocab_size=500, special_tokens=["<unk>", "</s>"], limit_alphabet=70,
                             show_progress=False)
    tok.train_from_iterator(train_text(), tr)
    return tok


FAMILIES = {
    "gpt2": gpt2, "gpt2_prefix_space": gpt2_prefix_space, "llama3": llama3, "qwen2": qwen2,
    "neox": neox, "llama2": llama2, "mistral": mistral, "unigram": unigram,
    "unigram_byte_fallback": unigram_byte_fallback, "wordpiece": wordpiece, "misc": misc,
    "splits": splits,
}


def main():
    os.makedirs(OUT, exist_ok=True)
    invalid = list(INVALID_UTF8)
    lines = corpus(invalid)
    expected = {"lines": lines, "invalid_utf8_hex": [b.hex() for b in invalid],
                "families": {}}
    for name, build in FAMILIES.items():
        tok = build()
        tok.save(os.path.join(OUT, name + ".json"))
        tok = Tokenizer.from_file(os.path.join(OUT, name + ".json"))
        rows = []
        for text in lines:
            ids = tok.encode(text, add_special_tokens=False).ids
            rows.append({"ids": ids, "ids_model": tok.encode(text).ids,
                         "decoded": tok.decode(ids)})
        expected["families"][name] = rows
        print(f"{name}: vocab {tok.get_vocab_size()}")
    with open(os.path.join(OUT, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, separators=(",", ":"))


if __name__ == "__main__":
    main()
