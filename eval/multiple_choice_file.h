// The lines of a multiple-choice task file (JSON Lines): plain, gzip, zstd or xz, recognised by
// the file's first bytes, not its name (tokenizer/input_stream.h, as corpora are read). Data that
// ends inside a compressed stream is an error, never a silently shorter file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace mixgpt {

class InputStream;

class TaskFileLines {
public:
    explicit TaskFileLines(const std::string& path);  // throws Error "<path>: cannot open (<reason>)"
    ~TaskFileLines();
    TaskFileLines(const TaskFileLines&) = delete;
    TaskFileLines& operator=(const TaskFileLines&) = delete;

    // The next line without its "\n" (and "\r\n"); false at the end. Throws Error on a read error
    // or corrupt or truncated compressed data.
    bool next(std::string& line);
    int64_t line_number() const { return line_number_; }  // of the last line returned, from 1
    const std::string& path() const { return path_; }

private:
    bool refill();

    std::string path_;
    std::unique_ptr<InputStream> stream_;
    std::string buffer_;
    size_t begin_ = 0;
    bool at_end_ = false;
    int64_t line_number_ = 0;
};

}  // namespace mixgpt
