#!/usr/bin/env python3
"""Shrinks a SentencePiece .model for the spm_model fuzz seeds (fuzz/make_seeds.sh): drops the
normalizer's precompiled character map (about 230 KB of the NFKC tables) and names the rule
"identity", editing the protobuf wire format directly. usage: spm_strip.py IN OUT"""
import sys


def varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v, i


def enc_varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def fields(buf):
    """(field number, wire type, raw bytes of the whole field) for each field of a message."""
    i = 0
    while i < len(buf):
        start = i
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            _, i = varint(buf, i)
        elif wt == 1:
            i += 8
        elif wt == 2:
            n, i = varint(buf, i)
            i += n
        elif wt == 5:
            i += 4
        else:
            raise ValueError(f"wire type {wt}")
        yield num, wt, buf[start:i]


def payload(raw):
    _, i = varint(raw, 0)
    _, i = varint(raw, i)
    return raw[i:]


def strip(model):
    out = bytearray()
    for num, wt, raw in fields(model):
        if num == 3 and wt == 2:  # NormalizerSpec
            spec = bytearray()
            for n2, w2, r2 in fields(payload(raw)):
                if n2 == 1:  # name
                    name = b"identity"
                    spec += enc_varint((1 << 3) | 2) + enc_varint(len(name)) + name
                elif n2 != 2:  # 2: precompiled_charsmap
                    spec += r2
            out += enc_varint((3 << 3) | 2) + enc_varint(len(spec)) + spec
        else:
            out += raw
    return bytes(out)


if __name__ == "__main__":
    data = open(sys.argv[1], "rb").read()
    open(sys.argv[2], "wb").write(strip(data))
