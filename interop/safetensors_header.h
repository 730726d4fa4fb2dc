// The header of a safetensors file, parsed and checked against hostile input (fuzzed by
// fuzz/safetensors_header.cpp). Format (https://github.com/huggingface/safetensors):
//
//   8 bytes    N, unsigned little-endian: the header's length in bytes
//   N bytes    UTF-8 JSON object: for each tensor "name": {"dtype": "F32", "shape": [d0, d1, ...],
//              "data_offsets": [begin, end]}, offsets in bytes relative to the data area; an
//              optional "__metadata__" object of string values. It starts with '{' and may be
//              padded with trailing spaces.
//   the rest   the data area: the tensors, little-endian, row-major, back to back.
//
// Checks: N fits in the file and in kMaxHeaderBytes; the JSON is an object of objects with
// exactly those fields; dtypes are known; shapes are non-negative and their byte size (without
// overflow) equals end - begin; the tensors cover the data area exactly, with no overlap and no
// hole (as the reference implementation requires). Every failure throws Error
// "<source>: <reason>" in one line.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mixgpt::interop {

inline constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;  // the reference reader's limit

struct SafetensorsTensor {
    std::string name;
    std::string dtype;            // "F32", "BF16", "F16", ... as in the file
    std::vector<int64_t> shape;   // empty for a scalar
    uint64_t begin = 0, end = 0;  // bytes in the data area
};

struct SafetensorsHeader {
    uint64_t header_bytes = 0;               // N
    std::vector<SafetensorsTensor> tensors;  // by data offset
    std::map<std::string, std::string> metadata;

    uint64_t data_start() const { return 8 + header_bytes; }
    const SafetensorsTensor* find(const std::string& name) const;  // nullptr when absent
};

// Bytes per element of a safetensors dtype; 0 for an unknown one.
size_t safetensors_dtype_size(std::string_view dtype);

// N from the first 8 bytes of a file of `file_size` bytes; throws when the file is shorter than
// 8 bytes, or N is 0, over kMaxHeaderBytes or past the end of the file.
uint64_t read_header_length(const unsigned char* first_bytes, uint64_t available, uint64_t file_size,
                            const std::string& source);

// Parses the N header bytes `json`, for a file of `file_size` bytes.
SafetensorsHeader parse_safetensors_header(std::string_view json, uint64_t file_size,
                                           const std::string& source);

}  // namespace mixgpt::interop
