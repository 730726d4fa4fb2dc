// Reading corpus files: plain or gzip-compressed (detected from the content,
// through zlib), and splitting them into lines with bounded memory.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace mixgpt {

class InputStream {
public:
    explicit InputStream(const std::string& path);  // throws Error "<path>: cannot open (<reason>)"
    ~InputStream();
    InputStream(const InputStream&) = delete;
    InputStream& operator=(const InputStream&) = delete;

    // Reads up to `capacity` bytes; returns 0 at the end. Throws on a read or gzip error.
    size_t read(char* buffer, size_t capacity);
    bool compressed() const { return compressed_; }
    uint64_t file_position() const;  // bytes of the file consumed so far (compressed bytes for .gz)
    void seek(uint64_t offset);      // plain files only
    const std::string& path() const { return path_; }

private:
    std::string path_;
    gzFile file_ = nullptr;
    bool compressed_ = false;
};

// Lines of a stream, each with its '\n' when it has one. A line longer than
// `max_piece_bytes` comes in several pieces, cut at UTF-8 character boundaries.
class LineReader {
public:
    LineReader(InputStream& stream, size_t max_piece_bytes);

    struct Piece {
        std::string_view text;   // valid until the next call
        bool line_start = true;  // the piece begins a line
        bool line_end = true;    // the piece ends a line
    };
    bool next(Piece& piece);                              // false at the end of the stream
    int64_t line_number() const { return line_number_; }  // of the last piece returned, from 1

private:
    bool refill();

    InputStream& stream_;
    size_t max_piece_bytes_;
    std::string buffer_;
    size_t begin_ = 0, end_ = 0;
    bool at_end_ = false;
    bool line_start_ = true;
    int64_t line_number_ = 0;
};

}  // namespace mixgpt
