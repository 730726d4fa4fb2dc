#!/usr/bin/python3
"""Writes the documents of a GPT-2-tokenized mixgpt dataset as JSON lines {"text": ..., "ids": [...]}:
each document's token ids (end-of-text token removed) and its text, decoded with the dataset's
encoder.json or vocab.json in plain Python (GPT-2's byte alphabet, no mixgpt code). The dataset is
a folder (index.json: its shards in order) or one HDF5 file (a shard, or a dataset.h5 made before
shards). For scripts/check_gpt2_tokenizer.sh, scripts/tokenizer_bench.sh and
scripts/make_gpt2_fixtures.sh; needs h5py (Debian's python3-h5py).

  /usr/bin/python3 scripts/gpt2_dataset_documents.py data/kjv_gpt2 [--split train] > docs.jsonl
"""
import argparse
import json
import os
import sys

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt2_tokenizer import byte_alphabet  # noqa: E402


def shard_paths(path):
    """The HDF5 files of a dataset, in order."""
    if not os.path.isdir(path):
        return [path]
    index = os.path.join(path, "index.json")
    if not os.path.exists(index):
        return [os.path.join(path, "dataset.h5")]
    with open(index) as stream:
        return [os.path.join(path, shard["file"]) for shard in json.load(stream)["shards"]]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", help="a dataset folder, or one HDF5 file of one")
    parser.add_argument("--split", default="train")
    args = parser.parse_args()
    shards = shard_paths(args.dataset)
    with h5py.File(shards[0], "r") as dataset:
        attribute = lambda name: dataset.attrs[name].decode() if isinstance(dataset.attrs[name], bytes) else dataset.attrs[name]
        if "tokenizer_kind" not in dataset.attrs or attribute("tokenizer_kind") != "gpt2":
            sys.exit(f"{args.dataset}: not a GPT-2-tokenized dataset")
        vocabulary_file = os.path.join(os.path.dirname(shards[0]), attribute("tokenizer_file"))
        eot = int(dataset.attrs["eot_id"])
    if vocabulary_file.endswith(".tiktoken"):
        sys.exit(f"{vocabulary_file}: decode needs encoder.json or vocab.json")
    with open(vocabulary_file, encoding="utf-8") as file:
        vocabulary = json.load(file)
    to_byte = {character: byte for byte, character in byte_alphabet().items()}
    token_bytes = {}
    for token, token_id in vocabulary.items():
        token_bytes[token_id] = bytes(to_byte[c] for c in token)
    out = sys.stdout
    for shard in shards:
        with h5py.File(shard, "r") as dataset:
            tokens = dataset[f"/{args.split}/tokens"][:]
            offsets = dataset[f"/{args.split}/doc_offsets"][:]
        for d in range(len(offsets) - 1):
            ids = [int(i) for i in tokens[offsets[d]:offsets[d + 1]]]
            if ids and ids[-1] == eot:
                ids.pop()
            text = b"".join(token_bytes[i] for i in ids).decode("utf-8")
            out.write(json.dumps({"text": text, "ids": ids}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
