#include "tokenizer/input_stream.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace mixgpt {
namespace {

constexpr unsigned kZlibBufferBytes = 1u << 18;
constexpr size_t kReadBytes = size_t{1} << 18;

}  // namespace

InputStream::InputStream(const std::string& path) : path_(path) {
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    if (file_ == nullptr)
        throw Error(path + ": cannot open (" + (errno != 0 ? std::strerror(errno) : "out of memory") + ")");
    gzbuffer(file_, kZlibBufferBytes);
    // gzdirect() knows whether the file is compressed only after the first read.
    const int first = gzgetc(file_);
    if (first >= 0) {
        gzungetc(first, file_);
    } else {
        int code = 0;
        const char* message = gzerror(file_, &code);
        if (code != Z_OK) {
            const std::string reason = code == Z_ERRNO ? std::strerror(errno) : message;
            gzclose(file_);
            throw Error(path + ": cannot read (" + reason + ")");
        }
    }
    compressed_ = gzdirect(file_) == 0;
}

InputStream::~InputStream() {
    if (file_ != nullptr) gzclose(file_);
}

size_t InputStream::read(char* buffer, size_t capacity) {
    const int count = gzread(file_, buffer, static_cast<unsigned>(std::min<size_t>(capacity, 1u << 30)));
    int code = Z_OK;
    std::string message = gzerror(file_, &code);
    if (message.rfind(path_ + ": ", 0) == 0) message.erase(0, path_.size() + 2);  // zlib names the file too
    if (count < 0)
        throw Error(path_ + ": read error (" + (code == Z_ERRNO ? std::strerror(errno) : message) + ")");
    // zlib returns what it could from a gzip stream cut short and flags it here.
    if (code == Z_BUF_ERROR) throw Error(path_ + ": truncated gzip data (" + message + ")");
    return static_cast<size_t>(count);
}

uint64_t InputStream::file_position() const {
    const z_off_t offset = gzoffset(file_);
    return offset > 0 ? static_cast<uint64_t>(offset) : 0;
}

void InputStream::seek(uint64_t offset) {
    MIXGPT_REQUIRE(!compressed_, path_ + ": cannot seek in compressed input");
    if (gzseek(file_, static_cast<z_off_t>(offset), SEEK_SET) < 0) throw Error(path_ + ": seek failed");
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
