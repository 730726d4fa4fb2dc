#include "tokenizer/decompressor.h"

#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>

#include "core/error.h"
#include "core/log.h"

namespace mixgpt {
namespace {

constexpr unsigned char kGzipMagic[] = {0x1f, 0x8b};
constexpr unsigned char kZstdMagic[] = {0x28, 0xb5, 0x2f, 0xfd};
constexpr unsigned char kXzMagic[] = {0xfd, '7', 'z', 'X', 'Z', 0x00};

template <size_t N>
bool starts_with(ByteSource& source, const unsigned char (&magic)[N]) {
    return source.fill(N) >= N && std::memcmp(source.data(), magic, N) == 0;
}

[[noreturn]] void truncated(const ByteSource& source, const char* format) {
    throw Error(source.path() + ": truncated " + format + " data (the file ends inside a compressed stream)");
}

class GzipDecompressor : public Decompressor {
public:
    explicit GzipDecompressor(ByteSource& source) : source_(source) {
        if (inflateInit2(&stream_, 15 + 32) != Z_OK)
            throw Error(source.path() + ": zlib cannot start (out of memory)");
    }
    ~GzipDecompressor() override { inflateEnd(&stream_); }

    size_t read(char* out, size_t capacity) override {
        stream_.next_out = reinterpret_cast<Bytef*>(out);
        stream_.avail_out = static_cast<uInt>(std::min<size_t>(capacity, 1u << 30));
        while (stream_.avail_out > 0 && !finished_) {
            if (between_members_) {
                // Another member follows (pigz, bgzip, cat a.gz b.gz), or nothing: anything else
                // is refused, as zstd and xz refuse it (cat a.gz b.jsonl would lose b.jsonl).
                if (source_.fill(1) == 0) {
                    finished_ = true;
                    break;
                }
                if (!starts_with(source_, kGzipMagic))
                    throw Error(source_.path() + format(": byte %llu: data after the end of the gzip data "
                                                        "(not a gzip member: plain text joined to a .gz file?)",
                                                        static_cast<unsigned long long>(source_.consumed())));
                inflateReset(&stream_);
                between_members_ = false;
            }
            if (source_.fill(1) == 0) truncated(source_, "gzip");
            stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(source_.data()));
            stream_.avail_in = static_cast<uInt>(source_.available());
            const int status = inflate(&stream_, Z_NO_FLUSH);
            source_.consume(source_.available() - stream_.avail_in);
            if (status == Z_STREAM_END) {
                between_members_ = true;
            } else if (status != Z_OK && status != Z_BUF_ERROR) {
                throw Error(source_.path() + ": corrupt gzip data (" +
                            (stream_.msg != nullptr ? stream_.msg : "zlib error " + std::to_string(status)) +
                            ")");
            }
            if (stream_.avail_out < capacity) break;  // return what there is
        }
        return capacity - stream_.avail_out;
    }

private:
    ByteSource& source_;
    z_stream stream_{};
    bool between_members_ = false;
    bool finished_ = false;
};

class ZstdDecompressor : public Decompressor {
public:
    explicit ZstdDecompressor(ByteSource& source) : source_(source), context_(ZSTD_createDCtx()) {
        if (context_ == nullptr) throw Error(source.path() + ": zstd cannot start (out of memory)");
    }
    ~ZstdDecompressor() override { ZSTD_freeDCtx(context_); }

    size_t read(char* out, size_t capacity) override {
        ZSTD_outBuffer output{out, capacity, 0};
        while (output.pos == 0) {
            if (source_.fill(1) == 0) {
                if (frame_open_) truncated(source_, "zstd");
                return 0;
            }
            ZSTD_inBuffer input{source_.data(), source_.available(), 0};
            const size_t status = ZSTD_decompressStream(context_, &output, &input);
            source_.consume(input.pos);
            if (ZSTD_isError(status))
                throw Error(source_.path() + ": corrupt zstd data (" + ZSTD_getErrorName(status) + ")");
            frame_open_ = status != 0;
        }
        return output.pos;
    }

private:
    ByteSource& source_;
    ZSTD_DCtx* context_;
    bool frame_open_ = false;
};

class XzDecompressor : public Decompressor {
public:
    explicit XzDecompressor(ByteSource& source) : source_(source) {
        if (lzma_stream_decoder(&stream_, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK)
            throw Error(source.path() + ": liblzma cannot start (out of memory)");
    }
    ~XzDecompressor() override { lzma_end(&stream_); }

    size_t read(char* out, size_t capacity) override {
        stream_.next_out = reinterpret_cast<uint8_t*>(out);
        stream_.avail_out = capacity;
        while (stream_.avail_out == capacity && !finished_) {
            source_.fill(1);
            stream_.next_in = reinterpret_cast<const uint8_t*>(source_.data());
            stream_.avail_in = source_.available();
            const lzma_ret status = lzma_code(&stream_, source_.at_end() ? LZMA_FINISH : LZMA_RUN);
            source_.consume(source_.available() - stream_.avail_in);
            if (status == LZMA_STREAM_END) {
                finished_ = true;
            } else if (status == LZMA_BUF_ERROR && source_.at_end()) {
                truncated(source_, "xz");
            } else if (status != LZMA_OK) {
                throw Error(source_.path() + ": corrupt xz data (liblzma error " + std::to_string(status) +
                            ")");
            }
        }
        return capacity - stream_.avail_out;
    }

private:
    ByteSource& source_;
    lzma_stream stream_ = LZMA_STREAM_INIT;
    bool finished_ = false;
};

}  // namespace

const char* compression_name(Compression compression) {
    switch (compression) {
        case Compression::gzip:
            return "gzip";
        case Compression::zstd:
            return "zstd";
        case Compression::xz:
            return "xz";
        case Compression::none:
            break;
    }
    return "plain";
}

Compression detect_compression(ByteSource& source) {
    if (starts_with(source, kGzipMagic)) return Compression::gzip;
    if (starts_with(source, kZstdMagic)) return Compression::zstd;
    if (starts_with(source, kXzMagic)) return Compression::xz;
    return Compression::none;
}

std::unique_ptr<Decompressor> open_decompressor(Compression compression, ByteSource& source) {
    switch (compression) {
        case Compression::gzip:
            return std::make_unique<GzipDecompressor>(source);
        case Compression::zstd:
            return std::make_unique<ZstdDecompressor>(source);
        case Compression::xz:
            return std::make_unique<XzDecompressor>(source);
        case Compression::none:
            break;
    }
    throw Error(source.path() + ": not compressed");
}

}  // namespace mixgpt
