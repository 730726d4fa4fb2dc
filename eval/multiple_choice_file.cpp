#include "eval/multiple_choice_file.h"

#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "tokenizer/input_stream.h"

namespace mixgpt {

class TaskFileLines::Source {
public:
    virtual ~Source() = default;
    // Up to `capacity` bytes of text; 0 only at the end.
    virtual size_t read(char* out, size_t capacity) = 0;
};

namespace {

constexpr size_t kReadBytes = size_t{1} << 16;
constexpr unsigned char kZstdMagic[4] = {0x28, 0xB5, 0x2F, 0xFD};  // little-endian 0xFD2FB528

std::string system_reason() { return errno != 0 ? std::strerror(errno) : "unknown error"; }

bool starts_like_zstd(const std::string& path) {
    errno = 0;
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (file == nullptr) throw Error(path + ": cannot open (" + system_reason() + ")");
    unsigned char head[4] = {};
    const size_t count = std::fread(head, 1, sizeof head, file);
    std::fclose(file);
    return count == sizeof head && std::memcmp(head, kZstdMagic, sizeof head) == 0;
}

class PlainOrGzipSource final : public TaskFileLines::Source {
public:
    explicit PlainOrGzipSource(const std::string& path) : stream_(path) {}
    size_t read(char* out, size_t capacity) override { return stream_.read(out, capacity); }

private:
    InputStream stream_;
};

class ZstdSource final : public TaskFileLines::Source {
public:
    explicit ZstdSource(const std::string& path)
        : path_(path), input_bytes_(ZSTD_DStreamInSize()), stream_(ZSTD_createDStream()) {
        errno = 0;
        file_ = std::fopen(path.c_str(), "rb");
        if (file_ == nullptr || stream_ == nullptr) {
            const std::string reason = file_ == nullptr ? system_reason() : "out of memory";
            release();
            throw Error(path + ": cannot open (" + reason + ")");
        }
    }
    ~ZstdSource() override { release(); }
    ZstdSource(const ZstdSource&) = delete;
    ZstdSource& operator=(const ZstdSource&) = delete;

    size_t read(char* out, size_t capacity) override {
        ZSTD_outBuffer output{out, capacity, 0};
        while (true) {
            const size_t input_before = input_.pos;
            const size_t result = ZSTD_decompressStream(stream_, &output, &input_);
            if (ZSTD_isError(result))
                throw Error(path_ + ": corrupt zstd data (" + ZSTD_getErrorName(result) + ")");
            // 0: a frame is complete and flushed. A call that moved nothing says nothing new.
            if (input_.pos != input_before || output.pos > 0) frame_complete_ = result == 0;
            if (output.pos > 0) return output.pos;
            if (input_.pos < input_.size) continue;
            errno = 0;
            const size_t count = std::fread(input_bytes_.data(), 1, input_bytes_.size(), file_);
            if (count == 0) {
                if (std::ferror(file_)) throw Error(path_ + ": read error (" + system_reason() + ")");
                if (!frame_complete_) throw Error(path_ + ": truncated zstd data");
                return 0;
            }
            input_ = ZSTD_inBuffer{input_bytes_.data(), count, 0};
        }
    }

private:
    void release() {
        if (file_ != nullptr) std::fclose(file_);
        if (stream_ != nullptr) ZSTD_freeDStream(stream_);
    }

    std::string path_;
    std::vector<char> input_bytes_;
    ZSTD_DStream* stream_ = nullptr;
    std::FILE* file_ = nullptr;
    ZSTD_inBuffer input_{nullptr, 0, 0};
    bool frame_complete_ = false;
};

}  // namespace

TaskFileLines::TaskFileLines(const std::string& path) : path_(path) {
    if (starts_like_zstd(path))
        source_ = std::make_unique<ZstdSource>(path);
    else
        source_ = std::make_unique<PlainOrGzipSource>(path);
}

TaskFileLines::~TaskFileLines() = default;

bool TaskFileLines::refill() {
    if (at_end_) return false;
    buffer_.erase(0, begin_);
    begin_ = 0;
    const size_t old_size = buffer_.size();
    buffer_.resize(old_size + kReadBytes);
    const size_t count = source_->read(buffer_.data() + old_size, kReadBytes);
    buffer_.resize(old_size + count);
    at_end_ = count == 0;
    return count > 0;
}

bool TaskFileLines::next(std::string& line) {
    size_t scanned = begin_;  // no '\n' in [begin_, scanned)
    size_t newline;
    while ((newline = buffer_.find('\n', scanned)) == std::string::npos) {
        scanned = buffer_.size() - begin_;  // refill moves the unread bytes to the front
        if (!refill()) {
            if (begin_ == buffer_.size()) return false;
            newline = buffer_.size();  // the last line has no '\n'
            break;
        }
    }
    line.assign(buffer_, begin_, newline - begin_);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    begin_ = std::min(newline + 1, buffer_.size());
    ++line_number_;
    return true;
}

}  // namespace mixgpt
