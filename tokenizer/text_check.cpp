#include "tokenizer/text_check.h"

#include "core/log.h"
#include "tokenizer/utf8.h"

namespace mixgpt {
namespace {

bool is_control(unsigned char byte) {
    if (byte == 0x7f) return true;
    if (byte >= 0x20) return false;
    return byte != '\t' && byte != '\n' && byte != '\v' && byte != '\f' && byte != '\r' && byte != 0x1b;
}

}  // namespace

void TextCheck::add(const char* data, size_t count) {
    if (pending_.empty()) return scan(data, count, false);
    pending_.append(data, count);
    std::string joined;
    joined.swap(pending_);
    scan(joined.data(), joined.size(), false);
}

void TextCheck::finish() {
    std::string rest;
    rest.swap(pending_);
    scan(rest.data(), rest.size(), true);
    if (scanned_ > 0) judge(scanned_);
}

void TextCheck::scan(const char* data, size_t count, bool at_end) {
    for (size_t at = 0; at < count;) {
        const unsigned char byte = static_cast<unsigned char>(data[at]);
        size_t length = 1;
        bool suspect = false;
        if (byte < 0x80) {
            suspect = is_control(byte);
        } else {
            length = utf8::character_length(data + at, count - at);
            if (length == 0 && count - at < 4 && !at_end) {  // perhaps a character the next bytes complete
                pending_.assign(data + at, count - at);
                return;
            }
            suspect = length == 0;
            if (suspect) length = 1;
        }
        if (suspect) {
            if (suspect_ == 0) first_suspect_ = window_start_ + scanned_;
            ++suspect_;
            nuls_ += byte == 0;
        }
        scanned_ += length;
        at += length;
        if (scanned_ >= kTextWindowBytes) judge(scanned_);
    }
}

void TextCheck::judge(uint64_t window_bytes) {
    if (suspect_ >= kMinSuspectBytes &&
        static_cast<double>(suspect_) > kMaxSuspectFraction * static_cast<double>(window_bytes)) {
        const double percent = 100.0 * static_cast<double>(suspect_) / static_cast<double>(window_bytes);
        const std::string what =
            nuls_ * 2 >= suspect_
                ? "NUL bytes (binary data, or UTF-16 text: convert it to UTF-8)"
                : "control bytes or not valid UTF-8 (binary data, or text in another encoding such as "
                  "Latin-1: convert it to UTF-8)";
        const std::string window = window_bytes >= kTextWindowBytes
                                       ? std::string("64 KiB")
                                       : format("%llu bytes", static_cast<unsigned long long>(window_bytes));
        throw NotTextError(path_, format("byte %llu: not text: %.1f%% of the %s from byte %llu are %s",
                                         static_cast<unsigned long long>(first_suspect_), percent,
                                         window.c_str(), static_cast<unsigned long long>(window_start_),
                                         what.c_str()));
    }
    window_start_ += window_bytes;
    scanned_ = 0;
    suspect_ = nuls_ = 0;
}

}  // namespace mixgpt
