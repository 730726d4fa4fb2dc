// Decompression of corpus inputs, recognised by their first bytes, not by
// their names: gzip (zlib; concatenated members too), zstd (libzstd;
// concatenated frames) and xz (liblzma; concatenated streams). An input that
// ends inside a compressed stream is an error ("truncated zstd data"), never a
// silently shorter document; so is one with other data after its compressed data
// (`cat a.gz b.jsonl`), never silently dropped.
#pragma once

#include <memory>

#include "tokenizer/byte_source.h"

namespace mixgpt {

enum class Compression { none, gzip, zstd, xz };
const char* compression_name(Compression compression);  // "plain", "gzip", "zstd", "xz"

// Looks at the first bytes of `source` without consuming them.
Compression detect_compression(ByteSource& source);

class Decompressor {
public:
    virtual ~Decompressor() = default;
    // Up to `capacity` decompressed bytes; 0 only at the end of the data. Throws Error naming the
    // file on corrupt or truncated data.
    virtual size_t read(char* out, size_t capacity) = 0;
};

// `source` must outlive the decompressor. Compression::none is not a decompressor.
std::unique_ptr<Decompressor> open_decompressor(Compression compression, ByteSource& source);

}  // namespace mixgpt
