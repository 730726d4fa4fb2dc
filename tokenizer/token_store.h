// Read access to /<split>/tokens without HDF5 calls after opening, so that a
// prefetch thread can read while the rest of the program uses HDF5.
//
// At open, the dataset's layout is checked (chunked or contiguous,
// uncompressed, native byte order) and the file address of each chunk is
// looked up; tokens are then read with pread() from a descriptor held open.
// Token ids are checked against the vocabulary limit chunk by chunk, the
// first time a chunk is read (no full scan at open); the file's SHA-256, when
// given (index.json's record), the first time any token is read.
//
// A file replaced, truncated or rewritten while a run reads it (`cp other.h5
// dataset.h5`) is an Error naming it, never garbage or a crash: after every
// read the path's identity (device, inode, size, modification and change
// times) is compared with the one at open, and a short read fails. Nothing
// is memory-mapped, so a truncated file cannot raise SIGBUS.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/h5.h"

namespace mixgpt {

// What tells a file from its replacement or a rewrite of it.
struct FileIdentity {
    uint64_t device = 0, inode = 0, size = 0;
    int64_t modified_ns = 0, changed_ns = 0;
    bool operator==(const FileIdentity& other) const;
};

class TokenStore {
public:
    // `sha256`: the file's recorded SHA-256, checked at the first read ("": none recorded).
    TokenStore(const std::string& path, const std::string& split, int32_t vocab_limit, std::string sha256 = "");
    ~TokenStore();
    TokenStore(const TokenStore&) = delete;
    TokenStore& operator=(const TokenStore&) = delete;

    int64_t size() const { return tokens_; }
    // Copies tokens [offset, offset + count) into `out`. Not thread-safe (one
    // reader at a time). Throws Error naming the file on an id >= vocab_limit.
    void read(int64_t offset, int64_t count, int32_t* out);

private:
    void check_chunk(int64_t chunk);
    // Tokens [first, first + count) of `chunk` into out.
    void read_chunk(int64_t chunk, int64_t first, int64_t count, int32_t* out);
    void check_unchanged() const;

    std::string path_;
    std::string dataset_;  // "/train/tokens"
    int32_t vocab_limit_;
    std::string sha256_;  // still to check; "" once checked
    int64_t tokens_ = 0;
    h5::Type type_ = h5::Type::u16;
    int64_t chunk_elements_ = 0;
    std::vector<uint64_t> chunk_offsets_;  // (chunks,) byte offset of each chunk in the file
    std::vector<uint8_t> chunk_checked_;   // (chunks,) 1 once its ids were checked
    int descriptor_ = -1;
    FileIdentity identity_;
    std::vector<unsigned char> scratch_;  // raw bytes of one read
};

}  // namespace mixgpt
