// The raw bytes of one corpus input, a file or standard input ("-"), read
// through a buffer that decoders (tokenizer/decompressor.h) look into.
//
// Standard input can be read only once, yet `prepare` reads its inputs twice
// (a tokenizer sample, then the encoding pass). So the bytes read from it are
// kept in memory while sources opened as `replayable` read them (sniffing,
// sampling: bounded by what those read); the first source opened as
// `streaming` replays them and then reads on from the descriptor, keeping
// nothing. No source may be opened on standard input after that one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mixgpt {

inline constexpr const char* kStandardInputPath = "-";

enum class StreamUse { replayable, streaming };

class ByteSource {
public:
    ByteSource(const std::string& path, StreamUse use);  // throws Error "<path>: cannot open (<reason>)"
    ~ByteSource();
    ByteSource(const ByteSource&) = delete;
    ByteSource& operator=(const ByteSource&) = delete;

    // Makes at least `bytes` bytes available unless the input ends first;
    // returns the bytes available. Throws Error on a read error.
    size_t fill(size_t bytes);
    const char* data() const { return buffer_.data() + begin_; }
    size_t available() const { return end_ - begin_; }
    void consume(size_t bytes) { begin_ += bytes; }
    bool at_end() const { return at_end_ && available() == 0; }
    uint64_t consumed() const { return position_ + begin_; }  // raw bytes consumed so far
    bool seekable() const;
    void seek(uint64_t offset);  // regular files only
    const std::string& path() const { return path_; }

private:
    size_t read_more(char* into, size_t capacity);

    std::string path_;
    int descriptor_ = -1;
    bool standard_input_ = false;
    StreamUse use_;
    uint64_t stdin_offset_ = 0;  // for standard input: offset of the next byte to read
    std::vector<char> buffer_;
    size_t begin_ = 0, end_ = 0;
    uint64_t position_ = 0;  // raw offset of buffer_[0]
    bool at_end_ = false;
};

}  // namespace mixgpt
