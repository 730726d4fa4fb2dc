// Read access to /<split>/tokens without HDF5 calls after opening, so that a
// prefetch thread can read while the rest of the program uses HDF5.
//
// At open, the dataset's layout is checked (chunked or contiguous,
// uncompressed, native byte order) and the file address of each chunk is
// looked up; the file is then memory-mapped and tokens are copied straight
// from the mapping. Token ids are checked against the vocabulary limit chunk
// by chunk, the first time a chunk is read (no full scan at open).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/h5.h"

namespace mixgpt {

class TokenStore {
public:
    TokenStore(const std::string& path, const std::string& split, int32_t vocab_limit);
    ~TokenStore();
    TokenStore(const TokenStore&) = delete;
    TokenStore& operator=(const TokenStore&) = delete;

    int64_t size() const { return tokens_; }
    // Copies tokens [offset, offset + count) into `out`. Not thread-safe (one
    // reader at a time). Throws Error naming the file on an id >= vocab_limit.
    void read(int64_t offset, int64_t count, int32_t* out);

private:
    void check_chunk(int64_t chunk);
    template <typename T>
    void copy(int64_t chunk, int64_t first, int64_t count, int32_t* out) const;

    std::string path_;
    std::string dataset_;  // "/train/tokens"
    int32_t vocab_limit_;
    int64_t tokens_ = 0;
    h5::Type type_ = h5::Type::u16;
    int64_t chunk_elements_ = 0;
    std::vector<uint64_t> chunk_offsets_;  // (chunks,) byte offset of each chunk in the file
    std::vector<uint8_t> chunk_checked_;   // (chunks,) 1 once its ids were checked
    const unsigned char* mapping_ = nullptr;
    size_t mapping_bytes_ = 0;
};

}  // namespace mixgpt
