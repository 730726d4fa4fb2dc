// What a corpus input holds, judged from its first 64 KiB of text (after
// decompression): binary data that must not be taken for text, and whether
// it is JSON lines.
//
// Binary: a known signature (Parquet, zip, ELF, PDF, PNG, JPEG, GIF, HDF5,
// 7-Zip, tar, Arrow, NumPy, SQLite, and bzip2 or lz4 data, which prepare does
// not decompress), or NUL bytes in more than 1% of the head (binary data or
// UTF-16 text), or bytes that are not valid UTF-8 in more than 10% of it (and
// 64 bytes at least; Latin-1 text stays below that and is kept, its bytes as
// byte tokens).
#pragma once

#include <string>

#include "tokenizer/decompressor.h"

namespace mixgpt {

inline constexpr size_t kSniffBytes = size_t{1} << 16;

struct InputSniff {
    Compression compression = Compression::none;
    std::string binary;       // "" for text; else what the input looks like ("a Parquet file")
    bool json_lines = false;  // its first line is a JSON object (or starts one longer than the head)
};

// Throws Error naming the file when it cannot be read or its compressed data is corrupt or truncated.
InputSniff sniff_input(const std::string& path);

// The same judgement on bytes already read (`head`: the first bytes of the text).
InputSniff sniff_text(const std::string& head);

}  // namespace mixgpt
