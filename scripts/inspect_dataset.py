#!/usr/bin/env -S /usr/bin/python3
"""Shows that a mixgpt token dataset is ordinary HDF5 and SentencePiece: reads it with h5py,
checks it against its attributes and decodes a few windows with Python's sentencepiece.

    scripts/inspect_dataset.py data/kjv/dataset.h5
    scripts/inspect_dataset.py data/kjv/dataset.h5 --split val --windows 2 --seq-len 32 --verify

Checks: the tokenizer file's SHA-256 and vocabulary match the attributes; each split's token and
document counts match its datasets; every document ends with the end-of-text token. With
--verify, every document is decoded and the byte counts are compared too (exact for valid
UTF-8 text; sentencepiece decodes invalid bytes to U+FFFD). Exits with status 1 on a mismatch.
"""
import argparse
import hashlib
import os
import sys

import h5py
import numpy as np
import sentencepiece


def text_attribute(value):
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def check(condition, message, failures):
    print(("  ok    " if condition else "  FAIL  ") + message)
    if not condition:
        failures.append(message)


def inspect_split(data, name, processor, eot_id, arguments, failures):
    group = data[name]
    tokens, offsets = group["tokens"], group["doc_offsets"][:]
    print(f"/{name}: {group.attrs['tokens']} tokens ({tokens.dtype}, chunks {tokens.chunks}), "
          f"{group.attrs['documents']} documents, {group.attrs['bytes']} bytes")
    check(tokens.shape[0] == group.attrs["tokens"], f"{name}: tokens attribute = dataset length", failures)
    check(offsets.shape[0] == group.attrs["documents"] + 1, f"{name}: doc_offsets has documents + 1 entries",
          failures)
    check(offsets[0] == 0 and offsets[-1] == tokens.shape[0] and bool(np.all(np.diff(offsets) > 0)),
          f"{name}: doc_offsets rise from 0 to the token count", failures)
    ids = tokens[:]
    if offsets.shape[0] > 1:
        check(bool(np.all(ids[offsets[1:] - 1] == eot_id)), f"{name}: every document ends with eot_id {eot_id}",
              failures)
    if arguments.verify:
        total = sum(len(processor.decode(ids[begin:end - 1].tolist()).encode("utf-8"))
                    for begin, end in zip(offsets[:-1], offsets[1:]))
        check(total == group.attrs["bytes"], f"{name}: decoded documents hold {total} bytes", failures)
    seq_len = arguments.seq_len
    windows = (tokens.shape[0] - 1) // seq_len
    for window in range(min(arguments.windows, windows)):
        start = window * (windows // max(arguments.windows, 1)) * seq_len
        piece = ids[start:start + seq_len + 1].tolist()
        print(f"  window at token {start} ({seq_len + 1} tokens): {processor.decode(piece)!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", help="dataset.h5 made by `mixgpt prepare`")
    parser.add_argument("--tokenizer", help="SentencePiece model (default: the one named in the dataset, beside it)")
    parser.add_argument("--split", choices=["train", "val", "both"], default="both")
    parser.add_argument("--windows", type=int, default=3, help="windows to decode per split, spread over it")
    parser.add_argument("--seq-len", type=int, default=48, help="window length T (a window holds T + 1 tokens)")
    parser.add_argument("--verify", action="store_true", help="decode every document and check the byte counts")
    arguments = parser.parse_args()

    failures = []
    with h5py.File(arguments.dataset, "r") as data:
        attributes = {key: data.attrs[key] for key in data.attrs}
        print(f"{arguments.dataset}: format {text_attribute(attributes['format'])} "
              f"version {attributes['format_version']}")
        for key in sorted(attributes):
            print(f"  {key} = {text_attribute(attributes[key])}")
        tokenizer = arguments.tokenizer or os.path.join(os.path.dirname(arguments.dataset),
                                                        text_attribute(attributes["tokenizer_file"]))
        with open(tokenizer, "rb") as model:
            digest = hashlib.sha256(model.read()).hexdigest()
        processor = sentencepiece.SentencePieceProcessor(model_file=tokenizer)
        print(f"{tokenizer}: {processor.get_piece_size()} pieces, "
              f"eot {processor.id_to_piece(int(attributes['eot_id']))!r}")
        check(digest == text_attribute(attributes["tokenizer_sha256"]), "tokenizer SHA-256 matches", failures)
        check(processor.get_piece_size() == attributes["vocab_size"], "vocabulary size matches", failures)
        splits = ["train", "val"] if arguments.split == "both" else [arguments.split]
        for name in splits:
            inspect_split(data, name, processor, int(attributes["eot_id"]), arguments, failures)
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
