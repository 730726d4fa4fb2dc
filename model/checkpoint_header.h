// The text header in a checkpoint's first 512 bytes (the HDF5 user block), written after the
// HDF5 payload and checked before HDF5 reads anything:
//   mixgpt checkpoint\nversion 1\npayload_bytes <n>\npayload_crc32 <8 hex digits>\n
//   run_id <1 to 64 of [0-9a-z]>\n   (optional: files written before run ids existed lack it)
//   NUL padding
// The run id names the lineage of training runs the checkpoint belongs to (train/run_directory.h);
// it sits in the header so that checkpoint rotation reads 512 bytes per file, not HDF5.
// Parsing is a pure function of the bytes, so that it can be fuzzed (fuzz/checkpoint_header.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mixgpt {

constexpr size_t kCheckpointHeaderBytes = 512;
constexpr int64_t kCheckpointFormatVersion = 1;

struct CheckpointHeader {
    int64_t version = 0;
    uint64_t payload_bytes = 0;  // the HDF5 bytes after the header
    uint32_t payload_crc32 = 0;  // zlib's CRC-32 of those bytes
    std::string run_id;          // "" when the file has none
};

// Whether `run_id` may be written in a header: 1 to 64 characters of [0-9a-z].
bool is_valid_run_id(const std::string& run_id);

// The header block, padded with NULs to kCheckpointHeaderBytes.
std::string checkpoint_header_block(const CheckpointHeader& header);

// Parses the `size` bytes at `block` (the file's first bytes); throws Error naming `path` when
// they are fewer than kCheckpointHeaderBytes or do not hold a header this build reads.
CheckpointHeader parse_checkpoint_header(const char* block, size_t size, const std::string& path);

}  // namespace mixgpt
