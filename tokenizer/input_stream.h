// Reading corpus inputs: files or standard input ("-"), plain or compressed
// (gzip, zstd, xz: tokenizer/decompressor.h, detected from the content), and
// splitting them into lines with bounded memory. All the text read is judged
// to be text as it is read (tokenizer/text_check.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "tokenizer/byte_source.h"
#include "tokenizer/decompressor.h"
#include "tokenizer/text_check.h"

namespace mixgpt {

// `none`: for a reader that judges the bytes itself (tokenizer/input_sniff.h).
enum class TextJudgement { all, none };

class InputStream {
public:
    // Throws Error "<path>: cannot open (<reason>)".
    explicit InputStream(const std::string& path, StreamUse use = StreamUse::replayable,
                         TextJudgement judgement = TextJudgement::all);
    ~InputStream();
    InputStream(const InputStream&) = delete;
    InputStream& operator=(const InputStream&) = delete;

    // Reads up to `capacity` bytes of text; returns 0 at the end. Throws on a read error or
    // corrupt or truncated compressed data, and NotTextError when what was read is not text.
    size_t read(char* buffer, size_t capacity);
    Compression compression() const { return compression_; }
    bool compressed() const { return compression_ != Compression::none; }
    uint64_t file_position() const { return source_.consumed(); }  // input bytes consumed (compressed ones)
    uint64_t position() const { return position_; }                // text bytes returned so far
    bool seekable() const { return !compressed() && source_.seekable(); }
    void seek(uint64_t offset);  // seekable inputs only
    void skip(uint64_t bytes);   // reads and drops `bytes` bytes of text (throws if the input ends first)
    const std::string& path() const { return source_.path(); }

private:
    ByteSource source_;
    Compression compression_ = Compression::none;
    std::unique_ptr<Decompressor> decompressor_;
    uint64_t position_ = 0;
    std::optional<TextCheck> check_;
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
    uint64_t position() const { return stream_.position() - (end_ - begin_); }  // text bytes returned so far
    void set_line_number(int64_t lines) { line_number_ = lines; }  // lines before the stream's position

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
