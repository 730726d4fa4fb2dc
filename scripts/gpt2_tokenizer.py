"""GPT-2's tokenizer in plain Python (standard library only), independent of mixgpt's C++ one:
the algorithm of GPT-2's encoder.py (byte alphabet, merges applied lowest rank first, every
occurrence at once) with its pre-tokenisation regex written out over unicodedata's categories
(\\p{L}, \\p{N}) and Unicode's White_Space set, since Python's `re` has no \\p{...}. Reads
vocab.json + merges.txt (Hugging Face) or encoder.json + vocab.bpe (OpenAI). For
scripts/check_hf_export.py, scripts/hf_transformers_check.py and scripts/inspect_dataset.py.

  from gpt2_tokenizer import Gpt2Tokenizer
  tokenizer = Gpt2Tokenizer.from_folder("hf/demo")
  ids = tokenizer.encode("And God said"); text = tokenizer.decode(ids)
"""
import hashlib
import json
import os
import unicodedata

WHITE_SPACE = set(range(0x09, 0x0E)) | {0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000} \
    | set(range(0x2000, 0x200B))
CONTRACTIONS = ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d")


def byte_alphabet():
    """bytes_to_unicode of GPT-2's encoder.py: byte -> the character it is written as."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    characters, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            characters[byte] = chr(byte)
        else:
            characters[byte] = chr(256 + extra)
            extra += 1
    return characters


def character_class(character):
    if ord(character) in WHITE_SPACE:
        return "space"
    category = unicodedata.category(character)[0]
    return {"L": "letter", "N": "number"}.get(category, "other")


def pretokenize(text):
    """The pieces of 's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"""
    pieces, i, n = [], 0, len(text)
    classes = [character_class(c) for c in text]
    while i < n:
        contraction = next((c for c in CONTRACTIONS if text.startswith(c, i)), None)
        if contraction:
            pieces.append(contraction)
            i += len(contraction)
            continue
        start = i
        if text[i] == " " and i + 1 < n and classes[i + 1] != "space":
            i += 1
        if classes[i] != "space":
            kind = classes[i]
            while i < n and classes[i] == kind:
                i += 1
        else:
            end = i
            while end < n and classes[end] == "space":
                end += 1
            i = end - 1 if end < n and end - i > 1 else end
        pieces.append(text[start:i])
    return pieces


class Gpt2Tokenizer:
    def __init__(self, vocabulary, merges):
        self.encoder = vocabulary
        self.decoder = {token_id: token for token, token_id in vocabulary.items()}
        self.merges = merges
        self.ranks = {pair: rank for rank, pair in enumerate(merges)}
        self.byte_to_character = byte_alphabet()
        self.character_to_byte = {c: b for b, c in self.byte_to_character.items()}
        self.eot_id = vocabulary["<|endoftext|>"]
        self.cache = {}

    @classmethod
    def from_files(cls, vocabulary_path, merges_path):
        """encoder.json + vocab.bpe or vocab.json + merges.txt (a "#version" line, then one merge a line)."""
        with open(vocabulary_path, encoding="utf-8") as file:
            vocabulary = json.load(file)
        with open(merges_path, encoding="utf-8") as file:
            lines = file.read().split("\n")
        merges = [tuple(line.split()) for line in lines[1:] if line]
        return cls(vocabulary, merges)

    @classmethod
    def from_folder(cls, folder):
        for vocabulary_name, merges_name in (("vocab.json", "merges.txt"), ("encoder.json", "vocab.bpe")):
            if os.path.exists(os.path.join(folder, vocabulary_name)):
                return cls.from_files(os.path.join(folder, vocabulary_name), os.path.join(folder, merges_name))
        raise FileNotFoundError(f"{folder}: no vocab.json + merges.txt or encoder.json + vocab.bpe")

    def identity_sha256(self):
        """mixgpt's identity of the tokenizer (canonical_gpt2_text of tokenizer/gpt2_tokenizer.cpp): the
        SHA-256 of each id's bytes in hex, the merges as id pairs by rank and the end-of-text id, the same
        whichever files it was read from. Datasets and checkpoints record it as tokenizer_sha256."""
        lines = ["mixgpt gpt2 bpe 1", f"tokens {len(self.decoder)}"]
        lines += [self.decode_bytes([token_id]).hex() for token_id in range(len(self.decoder))]
        lines.append(f"merges {len(self.merges)}")
        lines += [f"{self.encoder[left]} {self.encoder[right]}" for left, right in self.merges]
        lines.append(f"eot {self.eot_id}")
        return hashlib.sha256(("\n".join(lines) + "\n").encode("ascii")).hexdigest()

    def bpe(self, piece):
        if piece in self.cache:
            return self.cache[piece]
        word = list(piece)
        while len(word) > 1:
            pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
            best = min(pairs, key=lambda pair: self.ranks.get(pair, float("inf")))
            if best not in self.ranks:
                break
            merged, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    merged.append(word[i] + word[i + 1])
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = merged
        self.cache[piece] = word
        return word

    def encode(self, text):
        ids = []
        for piece in pretokenize(text):
            written = "".join(self.byte_to_character[b] for b in piece.encode("utf-8"))
            ids.extend(self.encoder[token] for token in self.bpe(written))
        return ids

    def decode_bytes(self, ids):
        return bytes(self.character_to_byte[c] for i in ids for c in self.decoder[i])

    def decode(self, ids):
        return self.decode_bytes(ids).decode("utf-8", errors="replace")
