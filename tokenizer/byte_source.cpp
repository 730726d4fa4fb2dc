#include "tokenizer/byte_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "core/error.h"

namespace mixgpt {
namespace {

constexpr size_t kBufferBytes = size_t{1} << 18;

// What was read from standard input, for replays (see byte_source.h).
struct StandardInput {
    std::mutex mutex;
    std::vector<char> kept;
    bool streaming = false;  // a streaming source was opened: nothing more is kept
};

StandardInput& standard_input() {
    static StandardInput instance;
    return instance;
}

std::string reason(int error) { return std::strerror(error); }

}  // namespace

ByteSource::ByteSource(const std::string& path, StreamUse use)
    : path_(path), standard_input_(path == kStandardInputPath), use_(use), buffer_(kBufferBytes) {
    if (standard_input_) {
        StandardInput& input = standard_input();
        std::lock_guard<std::mutex> lock(input.mutex);
        MIXGPT_REQUIRE(!input.streaming,
                       "standard input: already read to its end once (it cannot be read again)");
        input.streaming = use == StreamUse::streaming;
        return;
    }
    descriptor_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (descriptor_ < 0) throw Error(path + ": cannot open (" + reason(errno) + ")");
}

ByteSource::~ByteSource() {
    if (descriptor_ >= 0) ::close(descriptor_);
}

bool ByteSource::seekable() const { return !standard_input_; }

size_t ByteSource::read_more(char* into, size_t capacity) {
    if (!standard_input_) {
        for (;;) {
            const ssize_t count = ::read(descriptor_, into, capacity);
            if (count >= 0) return static_cast<size_t>(count);
            if (errno != EINTR) throw Error(path_ + ": read error (" + reason(errno) + ")");
        }
    }
    StandardInput& input = standard_input();
    std::lock_guard<std::mutex> lock(input.mutex);
    if (stdin_offset_ < input.kept.size()) {
        const size_t count = std::min<size_t>(capacity, input.kept.size() - stdin_offset_);
        std::memcpy(into, input.kept.data() + stdin_offset_, count);
        stdin_offset_ += count;
        return count;
    }
    if (use_ == StreamUse::streaming && !input.kept.empty()) std::vector<char>().swap(input.kept);
    for (;;) {
        const ssize_t count = ::read(STDIN_FILENO, into, capacity);
        if (count < 0 && errno == EINTR) continue;
        if (count < 0) throw Error("standard input: read error (" + reason(errno) + ")");
        if (use_ == StreamUse::replayable) input.kept.insert(input.kept.end(), into, into + count);
        stdin_offset_ += static_cast<uint64_t>(count);
        return static_cast<size_t>(count);
    }
}

size_t ByteSource::fill(size_t bytes) {
    bytes = std::min(bytes, buffer_.size());
    if (available() >= bytes || at_end_) return available();
    if (begin_ > 0) {
        std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
        position_ += begin_;
        end_ -= begin_;
        begin_ = 0;
    }
    while (end_ < bytes && !at_end_) {
        const size_t count = read_more(buffer_.data() + end_, buffer_.size() - end_);
        if (count == 0) at_end_ = true;
        end_ += count;
    }
    return available();
}

void ByteSource::seek(uint64_t offset) {
    MIXGPT_REQUIRE(seekable(), path_ + ": cannot seek in standard input");
    if (::lseek(descriptor_, static_cast<off_t>(offset), SEEK_SET) < 0)
        throw Error(path_ + ": seek failed (" + reason(errno) + ")");
    position_ = offset;
    begin_ = end_ = 0;
    at_end_ = false;
}

}  // namespace mixgpt
