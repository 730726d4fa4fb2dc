#!/usr/bin/env -S /usr/bin/python3
"""Shows that a mixgpt token dataset is ordinary JSON, HDF5 and SentencePiece or GPT-2 BPE: reads it
with h5py, checks it against its index and attributes and decodes a few windows with Python's
sentencepiece, or for GPT-2 datasets with scripts/gpt2_tokenizer.py (plain Python).

    scripts/inspect_dataset.py data/kjv                       # a dataset folder (index.json + shards)
    scripts/inspect_dataset.py data/old/dataset.h5 --split val --windows 2 --seq-len 32 --verify

Checks: every shard the index lists exists with its recorded size and SHA-256 (--no-checksums skips
the hashing) and holds the token and document counts the index gives; the tokenizer's SHA-256 (of
the SentencePiece model file; of GPT-2's vocabulary and merges in mixgpt's canonical form) and
vocabulary match; each split's doc_offsets rise from 0 to its token count; every document ends with
the end-of-text token. With --verify, every document is decoded and the byte counts are compared
too (exact for GPT-2, and for SentencePiece on valid UTF-8 text: sentencepiece decodes invalid
bytes to U+FFFD). GPT-2's .tiktoken rank files are not read here (no decoding). Tokens are read in
chunks of --chunk-tokens, so memory does not grow with the dataset. Exits with status 1 on a
mismatch.
"""
import argparse
import hashlib
import json
import os
import sys

import h5py
import numpy as np


def text_attribute(value):
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def check(condition, message, failures):
    print(("  ok    " if condition else "  FAIL  ") + message)
    if not condition:
        failures.append(message)


def file_sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def load_dataset(path):
    """(folder, index) for a folder with index.json; a single .h5 file becomes an index of one shard."""
    if os.path.isdir(path) and os.path.exists(os.path.join(path, "index.json")):
        with open(os.path.join(path, "index.json")) as stream:
            return path, json.load(stream)
    if os.path.isdir(path):
        path = os.path.join(path, "dataset.h5")
    with h5py.File(path, "r") as data:
        attributes = data.attrs
        files = (text_attribute(attributes["tokenizer_files"]).split("\n") if "tokenizer_files" in attributes
                 else [text_attribute(attributes["tokenizer_file"])])
        kind = text_attribute(attributes["tokenizer_kind"]) if "tokenizer_kind" in attributes else "sentencepiece"
        index = {"format": "single file " + text_attribute(attributes["format"]),
                 "tokenizer": {"kind": kind, "files": files, "sha256": text_attribute(attributes["tokenizer_sha256"])},
                 "vocab_size": int(attributes["vocab_size"]), "eot_id": int(attributes["eot_id"]),
                 "shards": [{"file": os.path.basename(path), "bytes": None, "sha256": None,
                             "train": {key: int(data["train"].attrs[key]) for key in ("tokens", "bytes", "documents")},
                             "val": {key: int(data["val"].attrs[key]) for key in ("tokens", "bytes", "documents")}}]}
    return os.path.dirname(path) or ".", index


class SentencePieceDecoder:
    def __init__(self, model):
        import sentencepiece
        self.processor = sentencepiece.SentencePieceProcessor(model_file=model)
        self.vocab_size = self.processor.get_piece_size()

    def text(self, ids):
        return self.processor.decode(ids)

    def byte_count(self, ids):
        return len(self.processor.decode(ids).encode("utf-8"))


class Gpt2Decoder:
    def __init__(self, vocabulary, merges):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from gpt2_tokenizer import Gpt2Tokenizer
        self.tokenizer = Gpt2Tokenizer.from_files(vocabulary, merges)
        self.vocab_size = len(self.tokenizer.decoder)

    def text(self, ids):
        return self.tokenizer.decode(ids)

    def byte_count(self, ids):
        return len(self.tokenizer.decode_bytes(ids))


def tokenizer_decoder(folder, tokenizer, index, arguments, failures):
    """The dataset's tokenizer, its identity and vocabulary checked; None when it cannot be read here."""
    files = [os.path.join(folder, name) for name in tokenizer["files"]]
    if tokenizer["kind"] == "sentencepiece":
        model = arguments.tokenizer or files[0]
        check(file_sha256(model) == tokenizer["sha256"], f"{model}: SHA-256 matches", failures)
        decoder = SentencePieceDecoder(model)
    elif tokenizer["kind"] == "gpt2" and len(files) == 2:
        if arguments.tokenizer:  # a folder holding GPT-2's files
            names = [("vocab.json", "merges.txt"), ("encoder.json", "vocab.bpe")]
            pair = next((p for p in names if os.path.exists(os.path.join(arguments.tokenizer, p[0]))), names[1])
            files = [os.path.join(arguments.tokenizer, name) for name in pair]
        decoder = Gpt2Decoder(*files)
        check(decoder.tokenizer.identity_sha256() == tokenizer["sha256"],
              f"{'+'.join(files)}: GPT-2 vocabulary and merges give the recorded SHA-256", failures)
    else:
        print(f"  (a {tokenizer['kind']} tokenizer in {'+'.join(tokenizer['files'])}: not checked nor used to "
              "decode here)")
        return None
    check(decoder.vocab_size == index["vocab_size"], "vocabulary size matches", failures)
    return decoder


def inspect_split(shard, name, expected, eot_id, arguments, processor, failures):
    group = shard[name]
    tokens, offsets = group["tokens"], group["doc_offsets"][:]
    print(f"  /{name}: {tokens.shape[0]} tokens ({tokens.dtype}, chunks {tokens.chunks}), "
          f"{offsets.shape[0] - 1} documents, {group.attrs['bytes']} bytes")
    check(tokens.shape[0] == group.attrs["tokens"] == expected["tokens"], f"{name}: token count", failures)
    check(offsets.shape[0] == expected["documents"] + 1, f"{name}: doc_offsets has documents + 1 entries", failures)
    check(offsets[0] == 0 and offsets[-1] == tokens.shape[0] and bool(np.all(np.diff(offsets) > 0)),
          f"{name}: doc_offsets rise from 0 to the token count", failures)
    ends = offsets[1:] - 1  # the position of each document's end-of-text token
    ok, decoded_bytes = True, 0
    for start in range(0, tokens.shape[0], arguments.chunk_tokens):
        chunk = tokens[start:start + arguments.chunk_tokens]
        inside = ends[(ends >= start) & (ends < start + chunk.shape[0])] - start
        ok = ok and bool(np.all(chunk[inside] == eot_id))
    check(ok, f"{name}: every document ends with eot_id {eot_id}", failures)
    if arguments.verify and processor is not None:
        for begin, end in zip(offsets[:-1], offsets[1:]):
            decoded_bytes += processor.byte_count(tokens[begin:end - 1].tolist())
        check(decoded_bytes == group.attrs["bytes"], f"{name}: decoded documents hold {decoded_bytes} bytes", failures)
    windows = (tokens.shape[0] - 1) // arguments.seq_len
    for window in range(min(arguments.windows, windows)):
        start = window * (windows // max(arguments.windows, 1)) * arguments.seq_len
        piece = tokens[start:start + arguments.seq_len + 1].tolist()
        text = processor.text(piece) if processor is not None else piece
        print(f"    window at token {start} ({arguments.seq_len + 1} tokens): {text!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", help="a dataset folder (index.json), or a dataset.h5 made before shards")
    parser.add_argument("--tokenizer", help="SentencePiece model, or a folder of GPT-2's files (default: the "
                                            "tokenizer's files the index names, beside it)")
    parser.add_argument("--split", choices=["train", "val", "both"], default="both")
    parser.add_argument("--windows", type=int, default=2, help="windows to decode per split and shard")
    parser.add_argument("--seq-len", type=int, default=48, help="window length T (a window holds T + 1 tokens)")
    parser.add_argument("--verify", action="store_true", help="decode every document and check the byte counts")
    parser.add_argument("--no-checksums", action="store_true", help="do not hash the shard files")
    parser.add_argument("--chunk-tokens", type=int, default=1 << 20, help="tokens read at a time")
    arguments = parser.parse_args()

    failures = []
    folder, index = load_dataset(arguments.dataset)
    tokenizer = index["tokenizer"]
    print(f"{arguments.dataset}: {index['format']}, {len(index['shards'])} shards, "
          f"tokenizer {tokenizer['kind']} {'+'.join(tokenizer['files'])}")
    for key in ("vocab_size", "eot_id", "seed", "val_fraction", "shard_tokens"):
        if key in index:
            print(f"  {key} = {index[key]}")
    for command in index.get("commands", []):
        print(f"  made by: {command}")
    processor = tokenizer_decoder(folder, tokenizer, index, arguments, failures)
    splits = ["train", "val"] if arguments.split == "both" else [arguments.split]
    for record in index["shards"]:
        path = os.path.join(folder, record["file"])
        print(f"{path}:")
        if record["bytes"] is not None:
            check(os.path.getsize(path) == record["bytes"], "size matches the index", failures)
            if not arguments.no_checksums:
                check(file_sha256(path) == record["sha256"], "SHA-256 matches the index", failures)
        with h5py.File(path, "r") as shard:
            check(text_attribute(shard.attrs["tokenizer_sha256"]) == tokenizer["sha256"], "same tokenizer", failures)
            for name in splits:
                inspect_split(shard, name, record[name], int(index["eot_id"]), arguments, processor, failures)
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
