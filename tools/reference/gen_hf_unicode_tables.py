#!/usr/bin/env python3
"""Generates src/meshlm/data/hf/unicode_tables.cpp: the Unicode data that HF tokenizers'
normalizers and pre-tokenizers use, for meshlm's HF pipeline (data/hf/).

Source of truth is HF tokenizers itself, probed code point by code point (nothing downloaded):
  - NFD / NFKD full decompositions: normalizers.NFD() / NFKD() on every code point (Hangul
    syllables excepted: they decompose algorithmically in data/hf/unicode_norm.cpp);
  - canonical composition pairs: the two-code-point canonical decompositions of CPython's
    unicodedata, kept where HF's NFC composes the pair back (composition exclusions drop out);
  - canonical combining classes: CPython's unicodedata.combining (HF's NFD output is checked to
    be ordered by them);
  - lowercase: normalizers.Lowercase() (Rust str::to_lowercase; final sigma handled in code);
  - punctuation: pre_tokenizers.Punctuation(); marks: normalizers.StripAccents(); \\w: Split on
    Oniguruma's [^\\w] (the Whitespace pre-tokenizer's word class).
HF tokenizers' unicode-normalization-alignments crate and CPython's unicodedata differ in Unicode
version; the script prints how many code points CPython's NFD/NFKD would decompose differently.

    .venv/bin/python tools/reference/gen_hf_unicode_tables.py > src/meshlm/data/hf/unicode_tables.cpp
    clang-format -i src/meshlm/data/hf/unicode_tables.cpp
"""
import sys
import unicodedata

import tokenizers
from tokenizers import Regex, normalizers, pre_tokenizers

CPS = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
TEXT = "".join(map(chr, CPS))


def probe_map(norm):
    out = {}
    for c in CPS:
        s = norm.normalize_str(chr(c))
        if s != chr(c):
            out[c] = [ord(x) for x in s]
    return out


def removed_set(pt):
    kept = {ord(ch) for p, _ in pt.pre_tokenize_str(TEXT) for ch in p}
    return set(CPS) - kept


def ranges(s):
    out = []
    for c in sorted(s):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def emit_list(name, ctype, items, fmt):
    lines = [f"constexpr {ctype} {name}[] = {{"]
    line = "   "
    for it in items:
        item = " " + fmt(it) + ","
        if len(line) + len(item) > 100:
            lines.append(line)
            line = "   "
        line += item
    lines.append(line)
    lines.append("};")
    return lines


def emit_map(name, m):
    # (cp, offset, length) into a shared pool of code points.
    pool, entries = [], []
    for c in sorted(m):
        entries.append((c, len(pool), len(m[c])))
        pool.extend(m[c])
    out = emit_list(name, "MapEntry", entries, lambda e: f"{{0x{e[0]:X}, {e[1]}, {e[2]}}}")
    out += emit_list(name + "Pool", "char32_t", pool, lambda c: f"0x{c:X}")
    return out


def main():
    is_hangul = lambda c: 0xAC00 <= c <= 0xD7A3  # noqa: E731
    nfd = {c: v for c, v in probe_map(normalizers.NFD()).items() if not is_hangul(c)}
    nfkd = {c: v for c, v in probe_map(normalizers.NFKD()).items() if not is_hangul(c)}
    compat = {c: v for c, v in nfkd.items() if nfd.get(c) != v}
    py_nfd = sum(1 for c in CPS if not is_hangul(c) and
                 (unicodedata.normalize("NFD", chr(c)) != chr(c)) != (c in nfd))
    print(f"NFD: {len(nfd)} code points decompose; CPython {unicodedata.unidata_version} differs "
          f"on {py_nfd}; NFKD adds {len(compat)}", file=sys.stderr)
    ccc = {c: unicodedata.combining(chr(c)) for c in CPS if unicodedata.combining(chr(c))}
    nfc = normalizers.NFC()
    pairs = []
    for c in CPS:
        d = unicodedata.decomposition(chr(c))
        if not d or d.startswith("<"):
            continue
        parts = [int(x, 16) for x in d.split()]
        if len(parts) == 2 and nfc.normalize_str(chr(parts[0]) + chr(parts[1])) == chr(c):
            pairs.append((parts[0], parts[1], c))
    pairs.sort()
    lower = probe_map(normalizers.Lowercase())
    punct = removed_set(pre_tokenizers.Punctuation(behavior="removed"))
    marks = {c for c in CPS if normalizers.StripAccents().normalize_str(chr(c)) == ""}
    word = removed_set(pre_tokenizers.Split(Regex(r"[^\w]"), behavior="removed", invert=True))
    print(f"ccc {len(ccc)}, pairs {len(pairs)}, lower {len(lower)}, punct {len(punct)}, "
          f"marks {len(marks)}, word {len(word)}", file=sys.stderr)

    body = []
    body += emit_map("kCanon", nfd)
    body += emit_map("kCompat", compat)
    body += emit_map("kLower", lower)
    body += emit_list("kCompose", "ComposePair", pairs,
                      lambda p: f"{{0x{p[0]:X}, 0x{p[1]:X}, 0x{p[2]:X}}}")
    cr = []
    for c in sorted(ccc):
        if cr and cr[-1][1] == c - 1 and cr[-1][2] == ccc[c]:
            cr[-1][1] = c
        else:
            cr.append([c, c, ccc[c]])
    body += emit_list("kCcc", "CccRange", cr, lambda r: f"{{0x{r[0]:X}, 0x{r[1]:X}, {r[2]}}}")
    for name, s in [("kPunct", punct), ("kMark", marks), ("kWord", word)]:
        body += emit_list(name, "CodePointRange", ranges(s),
                          lambda r: f"{{0x{r[0]:X}, 0x{r[1]:X}}}")
    print(f"""// GENERATED by tools/reference/gen_hf_unicode_tables.py -- do not edit.
// Unicode data of HF tokenizers {tokenizers.__version__} (probed) and CPython
// {unicodedata.unidata_version} unicodedata (combining classes, composition pairs).
#include "meshlm/data/hf/unicode_tables.h"

namespace meshlm::hf::unicode_tables {{

namespace {{
{chr(10).join(body)}
}}  // namespace

const Tables& tables() {{
    static const Tables t{{kCanon,  std::size(kCanon),  kCanonPool, kCompat, std::size(kCompat),
                          kCompatPool, kLower, std::size(kLower), kLowerPool, kCompose,
                          std::size(kCompose), kCcc, std::size(kCcc), kPunct, std::size(kPunct),
                          kMark, std::size(kMark), kWord, std::size(kWord)}};
    return t;
}}

}}  // namespace meshlm::hf::unicode_tables""")


if __name__ == "__main__":
    main()
