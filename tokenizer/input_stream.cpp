#include "tokenizer/input_stream.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace mixgpt {
namespace {

constexpr size_t kReadBytes = size_t{1} << 18;

}  // namespace

InputStream::InputStream(const std::string& path, StreamUse use, TextJudgement judgement)
    : source_(path, use) {
    if (judgement == TextJudgement::all) check_.emplace(path);
    compression_ = detect_compression(source_);
    if (compressed()) decompressor_ = open_decompressor(compression_, source_);
}

InputStream::~InputStream() = default;

size_t InputStream::read(char* buffer, size_t capacity) {
    size_t count = 0;
    if (decompressor_) {
        count = decompressor_->read(buffer, capacity);
    } else if (source_.fill(1) > 0) {
        count = std::min(capacity, source_.available());
        std::memcpy(buffer, source_.data(), count);
        source_.consume(count);
    }
    position_ += count;
    if (check_ && count > 0) check_->add(buffer, count);
    if (check_ && count == 0) check_->finish();
    return count;
}

void InputStream::seek(uint64_t offset) {
    MIXGPT_REQUIRE(seekable(), path() + ": cannot seek in compressed input or standard input");
    source_.seek(offset);
    position_ = offset;
    if (check_) check_.emplace(path(), offset);
}

void InputStream::skip(uint64_t bytes) {
    std::string scratch(kReadBytes, '\0');
    while (bytes > 0) {
        const size_t count = read(scratch.data(), static_cast<size_t>(std::min<uint64_t>(bytes, kReadBytes)));
        if (count == 0)
            throw Error(path() + ": ends before the position to resume from (the input changed?)");
        bytes -= count;
    }
}

LineReader::LineReader(InputStream& stream, size_t max_piece_bytes)
    : stream_(stream), max_piece_bytes_(max_piece_bytes), buffer_(kReadBytes, '\0') {}

bool LineReader::refill() {
    if (at_end_) return false;
    if (begin_ > 0) {
        std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
    }
    if (buffer_.size() - end_ < kReadBytes) buffer_.resize(std::max(buffer_.size() * 2, end_ + kReadBytes));
    const size_t count = stream_.read(buffer_.data() + end_, buffer_.size() - end_);
    if (count == 0) at_end_ = true;
    end_ += count;
    return count > 0;
}

bool LineReader::next(Piece& piece) {
    size_t searched = begin_;
    for (;;) {
        const char* data = buffer_.data();
        const void* newline = std::memchr(data + searched, '\n', end_ - searched);
        size_t length = 0;
        bool line_end = true;
        if (newline != nullptr) {
            length = static_cast<size_t>(static_cast<const char*>(newline) - (data + begin_)) + 1;
            if (length > max_piece_bytes_) newline = nullptr;
        }
        if (newline == nullptr) {
            if (end_ - begin_ >= max_piece_bytes_) {
                length = utf8::character_boundary_at_or_before(data + begin_, max_piece_bytes_);
                if (length == 0) length = max_piece_bytes_;
                line_end = false;
            } else if (at_end_) {
                if (end_ == begin_) return false;
                length = end_ - begin_;
            } else {
                searched = end_ - begin_;
                refill();
                searched += begin_;
                continue;
            }
        }
        piece.text = std::string_view(buffer_.data() + begin_, length);
        piece.line_start = line_start_;
        piece.line_end = line_end;
        if (line_start_) ++line_number_;
        line_start_ = line_end;
        begin_ += length;
        return true;
    }
}

}  // namespace mixgpt
