// Reading and writing whole safetensors files (format: interop/safetensors_header.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "interop/safetensors_header.h"

namespace mixgpt::interop {

struct SafetensorsFile {
    std::string path;
    SafetensorsHeader header;
    std::vector<unsigned char> data;  // the data area

    // The bytes of `tensor` (one of header.tensors).
    const unsigned char* bytes_of(const SafetensorsTensor& tensor) const {
        return data.data() + tensor.begin;
    }
};

// Reads and checks a file; throws Error "<path>: <reason>".
SafetensorsFile read_safetensors(const std::string& path);

struct TensorToWrite {
    std::string name;
    std::string dtype;  // "F32", "BF16" or "F16"
    std::vector<int64_t> shape;
    std::vector<unsigned char> bytes;  // little-endian, row-major
};

// Writes the tensors back to back in the given order, after a header padded with spaces so that
// the data area starts at a multiple of 8 bytes. Throws Error "<path>: <reason>".
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata);

}  // namespace mixgpt::interop
