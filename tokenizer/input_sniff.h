// What a corpus input holds, judged from its first 64 KiB of text (after
// decompression): binary data that must not be taken for text, and whether
// it is JSON lines.
//
// Binary: a known signature (Parquet, zip, ELF, PDF, PNG, JPEG, GIF, HDF5,
// 7-Zip, tar, Arrow, NumPy, SQLite, and bzip2 or lz4 data, which prepare does
// not decompress), or a head that is not text by the judgement every reader
// applies to all of an input as it reads it (tokenizer/text_check.h: NUL,
// control bytes or bytes not valid UTF-8 in more than 1% of a window).
#pragma once

#include <string>

#include "tokenizer/decompressor.h"

namespace mixgpt {

inline constexpr size_t kSniffBytes = size_t{1} << 16;

struct InputSniff {
    Compression compression = Compression::none;
    std::string binary;       // "" or what its signature says it is ("a Parquet file")
    std::string not_text;     // "" or why its head is not text ("byte N: not text: ...")
    bool json_lines = false;  // its first line is a JSON object (or starts one longer than the head)
};

// Throws Error naming the file when it cannot be read or its compressed data is corrupt or truncated.
InputSniff sniff_input(const std::string& path);

}  // namespace mixgpt
