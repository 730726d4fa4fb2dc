// Whether a stream of bytes is text, judged over all of it as it is read (not from its head):
// every window of kTextWindowBytes bytes, counted from where the check starts, may hold at
// most 1% of bytes that are NUL, other control bytes (below 0x20 but tab, line feed, vertical
// tab, form feed, carriage return and escape; and DEL) or not part of valid UTF-8
// (tokenizer/utf8.h); fewer than kMinSuspectBytes such bytes in a window always pass (a short
// file with a stray byte or two). Binary data, UTF-16 and Latin-1 text fail.
#pragma once

#include <cstdint>
#include <string>

#include "core/error.h"

namespace mixgpt {

inline constexpr size_t kTextWindowBytes = size_t{1} << 16;
inline constexpr size_t kMinSuspectBytes = 8;
inline constexpr double kMaxSuspectFraction = 0.01;

// "<path>: byte N: not text: ..." where N is the first suspect byte of the failing window.
class NotTextError : public Error {
public:
    NotTextError(const std::string& path, std::string reason)
        : Error(path + ": " + reason), reason_(std::move(reason)) {}
    const std::string& reason() const { return reason_; }  // the message without the path

private:
    std::string reason_;
};

class TextCheck {
public:
    explicit TextCheck(std::string path, uint64_t offset = 0) : path_(std::move(path)), window_start_(offset) {}

    // The next bytes of the stream. Throws NotTextError when a window they complete fails.
    void add(const char* data, size_t count);
    // The stream ended: judges its last, partial window. Throws NotTextError.
    void finish();

private:
    void scan(const char* data, size_t count, bool at_end);
    void judge(uint64_t window_bytes);

    std::string path_;
    std::string pending_;         // bytes of a character the last add() cut (at most 3)
    uint64_t window_start_ = 0;   // stream offset of the window being counted
    uint64_t scanned_ = 0;        // bytes of the window scanned so far
    uint64_t suspect_ = 0, nuls_ = 0;
    uint64_t first_suspect_ = 0;  // its offset, when suspect_ > 0
};

}  // namespace mixgpt
