#!/usr/bin/python3
"""Writes the seed inputs of fuzz/safetensors_header.cpp into fuzz/corpus/safetensors_header/:
small safetensors files, valid ones (every dtype family, scalars, empty tensors, metadata, a
padded header, a GPT-2-named layer) and near misses (overlap, hole, truncation, bad JSON).
Standard library only; rerun it to regenerate the same bytes."""
import json
import os
import struct
import sys


def safetensors(header, data_bytes, pad_to=8):
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % pad_to)
    return struct.pack("<Q", len(text)) + text + bytes(range(256)) * (data_bytes // 256) + bytes(data_bytes % 256)


def tensor(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def seeds():
    C = 4
    layer = {}
    offset = 0
    for name, shape in [("transformer.h.0.ln_1.weight", [C]), ("transformer.h.0.attn.c_attn.weight", [C, 3 * C]),
                        ("transformer.h.0.attn.c_attn.bias", [3 * C]), ("transformer.wte.weight", [5, C])]:
        size = 4 * shape[0] * (shape[1] if len(shape) > 1 else 1)
        layer[name] = tensor("F32", shape, offset, offset + size)
        offset += size
    return {
        "empty": safetensors({}, 0),
        "metadata_only": safetensors({"__metadata__": {"format": "pt", "mixgpt_step": "30"}}, 0),
        "one_f32": safetensors({"a": tensor("F32", [2, 3], 0, 24)}, 24),
        "scalar_and_empty": safetensors({"s": tensor("F64", [], 0, 8), "e": tensor("BF16", [0, 7], 8, 8)}, 8),
        "mixed_dtypes": safetensors({"x": tensor("BF16", [3], 0, 6), "y": tensor("F16", [1], 6, 8),
                                     "z": tensor("I8", [4], 8, 12), "b": tensor("BOOL", [2], 12, 14),
                                     "f8": tensor("F8_E4M3", [2], 14, 16)}, 16),
        "gpt2_layer": safetensors(dict(layer, __metadata__={"format": "pt"}), offset),
        "unpadded": safetensors({"a": tensor("U8", [3], 0, 3)}, 3, pad_to=1),
        "overlap": safetensors({"a": tensor("F32", [2], 0, 8), "b": tensor("F32", [1], 4, 8)}, 8),
        "hole": safetensors({"a": tensor("F32", [1], 4, 8)}, 8),
        "truncated": safetensors({"a": tensor("F32", [4], 0, 16)}, 16)[:-5],
        "bad_json": struct.pack("<Q", 12) + b'{"a":{"dtyp',
        "huge_shape": safetensors({"a": tensor("F32", [4294967296, 4294967296], 0, 8)}, 8),
        "duplicate": struct.pack("<Q", 2 * 54 + 1) + b"{" + (b'"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},' * 2)[:-1] + b"}" + bytes(4),
    }


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus", "safetensors_header")
    os.makedirs(root, exist_ok=True)
    for name, data in seeds().items():
        with open(os.path.join(root, name + ".safetensors"), "wb") as file:
            file.write(data)
    print(f"wrote {len(seeds())} seeds to {os.path.normpath(root)}", file=sys.stderr)


if __name__ == "__main__":
    main()
