#include "eval/multiple_choice_file.h"

#include <algorithm>

#include "tokenizer/input_stream.h"

namespace mixgpt {

namespace {
constexpr size_t kReadBytes = size_t{1} << 16;
}  // namespace

TaskFileLines::TaskFileLines(const std::string& path)
    : path_(path), stream_(std::make_unique<InputStream>(path, StreamUse::streaming)) {}

TaskFileLines::~TaskFileLines() = default;

bool TaskFileLines::refill() {
    if (at_end_) return false;
    buffer_.erase(0, begin_);
    begin_ = 0;
    const size_t old_size = buffer_.size();
    buffer_.resize(old_size + kReadBytes);
    const size_t count = stream_->read(buffer_.data() + old_size, kReadBytes);
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
