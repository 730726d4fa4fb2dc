#!/usr/bin/python3
"""Writes the seed corpus of each fuzz target into fuzz/corpus/<target>/ (committed; rerun after
changing a seed). Seeds are small, deterministic and readable: valid inputs and near misses."""
import os
import random
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    directory = os.path.join(HERE, "corpus", target)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as file:
        file.write(data if isinstance(data, bytes) else data.encode())


def toml_config():
    seeds = {
        "flat": 'model = "d2"\nbatch_size = 4\nlr = 3e-4\nstochastic_rounding = true\n',
        "tables": '[data]\nseq_len = 16\n[optimizer]\nbeta1 = 0.9\n[optimizer.adam]\nepsilon = 1e-8\n',
        "arrays": 'inputs = ["a.txt", "b/*.jsonl"]\nmixed = [1, 2.5, "x", true]\n',
        "strings": "a = \"tab\\tquote\\\"\\u00e9\"\nb = 'literal \\\\ raw'\nc = \"\"\"multi\nline\"\"\"\n",
        "inline_table": 'point = { x = 1, y = 2 }\n',
        "datetime": 'when = 1979-05-27T07:32:00Z\n',
        "syntax_error": 'model = \n[unterminated\n',
        "duplicate": 'a = 1\na = 2\n',
        "comments": '# a comment\nkey = "value" # trailing\n\n',
        "empty_quoted_key": "''='.'",  # found by a 10-minute run: an item with an empty name
    }
    for name, text in seeds.items():
        write("toml_config", name, text)


def corpus_readers():
    # First byte: bit 0 JSONL, bit 1 --skip-bad-lines, bit 3 gzip (else bit 2 zstd, else bit 6 xz),
    # bits 4-5 the separator ("", "blank-line", "---", "<|endoftext|>").
    text = "In the beginning.\nSecond line, caf\u00e9.\n\nNew paragraph.\n---\nAfter a separator.\n"
    jsonl = '{"text": "one"}\n{"text": "two\\nlines"}\n{"other": 1}\nnot json\n{"text": 5}\n'
    seeds = {
        "text_whole": (0x00, text),
        "text_blank_lines": (0x10, text),
        "text_separator": (0x20, text),
        "text_eot": (0x30, "a<|endoftext|>\n<|endoftext|>\nb\n"),
        "jsonl_strict": (0x01, '{"text": "one"}\n{"text": "two"}\n'),
        "jsonl_bad_lines": (0x01, jsonl),
        "jsonl_skip": (0x03, jsonl),
        "text_gzip": (0x18, text),
        "jsonl_gzip": (0x0B, jsonl),
        "text_zstd": (0x14, text),
        "jsonl_xz": (0x43, jsonl),
        "invalid_utf8": (0x00, b"ok \xff\xfe \xc3\x28 \xe2\x82 \xf0\x9f\x98\x80 end\r\n".decode("latin-1")),
        "long_line": (0x00, "word " * 3000),
        "empty": (0x00, ""),
    }
    for name, (mode, content) in seeds.items():
        write("corpus_readers", name, bytes([mode]) + content.encode("latin-1" if name == "invalid_utf8" else "utf-8"))
    write("corpus_readers", "raw_gzip_bytes", bytes([0x00]) + zlib.compress(text.encode())[:20])


def checkpoint_header():
    def block(text):
        return text.encode().ljust(512, b"\0")
    write("checkpoint_header", "valid", block("mixgpt checkpoint\nversion 1\npayload_bytes 1234\npayload_crc32 0badf00d\n"))
    write("checkpoint_header", "newer_version", block("mixgpt checkpoint\nversion 2\npayload_bytes 1\npayload_crc32 0\n"))
    write("checkpoint_header", "missing_crc", block("mixgpt checkpoint\nversion 1\npayload_bytes 99\n"))
    write("checkpoint_header", "negative_size", block("mixgpt checkpoint\nversion 1\npayload_bytes -5\npayload_crc32 zz\n"))
    write("checkpoint_header", "truncated", b"mixgpt checkpoint\nversion 1\n")
    write("checkpoint_header", "hdf5_signature", b"\x89HDF\r\n\x1a\n" + b"\0" * 504)


def dataset_header():
    random_bytes = random.Random(16)
    for size in (8, 64, 256, 1024, 4096):
        write("dataset_header", "random_%d" % size, bytes(random_bytes.getrandbits(8) for _ in range(size)))
    write("dataset_header", "all_ones_512", b"\xff" * 512)
    write("dataset_header", "all_zeros_512", b"\0" * 512)


def dataset_index():
    shard = ('{"file": "shard-%06d.h5", "bytes": 1000, "sha256": "ab", "first_document": %d, '
             '"train": {"tokens": 90, "bytes": 300, "documents": 3}, '
             '"val": {"tokens": 10, "bytes": 30, "documents": 1}, "invalid_utf8_bytes": 0, "skipped_lines": 0}')
    head = ('{"format": "mixgpt-token-shards", "format_version": 1, '
            '"tokenizer": {"kind": "sentencepiece", "files": ["tokenizer.model"], "sha256": "cd"}, '
            '"vocab_size": 8192, "eot_id": 1, "unk_id": 0, "seed": 0, "val_fraction": 0.05, "shard_tokens": 100, ')
    seeds = {
        "two_shards": head + '"shards": [' + shard % (0, 0) + ", " + shard % (1, 4) + '], "commands": ["mixgpt prepare"]}',
        "gap": head + '"shards": [' + shard % (0, 0) + ", " + shard % (1, 9) + '], "commands": []}',
        "path_in_name": head.replace("tokenizer.model", "../tokenizer.model") + '"shards": [], "commands": []}',
        "version_2": head.replace('"format_version": 1', '"format_version": 2') + '"shards": [], "commands": []}',
    }
    for name, text in seeds.items():
        write("dataset_index", name, text)


if __name__ == "__main__":
    toml_config()
    corpus_readers()
    checkpoint_header()
    dataset_header()
    dataset_index()
