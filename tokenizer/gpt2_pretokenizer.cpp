#include "tokenizer/gpt2_pretokenizer.h"

#include <array>
#include <cstring>

#include "tokenizer/unicode_classes.h"
#include "tokenizer/utf8.h"

namespace mixgpt {
namespace {

struct Character {
    UnicodeClass unicode_class;
    size_t length;  // bytes
    bool valid;
};

constexpr std::array<UnicodeClass, 128> ascii_classes() {
    std::array<UnicodeClass, 128> classes{};
    for (int c = 0; c < 128; ++c) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
            classes[c] = UnicodeClass::letter;
        } else if (c >= '0' && c <= '9') {
            classes[c] = UnicodeClass::number;
        } else if (c == ' ' || (c >= '\t' && c <= '\r')) {
            classes[c] = UnicodeClass::whitespace;
        } else {
            classes[c] = UnicodeClass::other;
        }
    }
    return classes;
}

constexpr std::array<UnicodeClass, 128> kAsciiClasses = ascii_classes();

Character character_at(std::string_view text, size_t position) {
    const auto lead = static_cast<unsigned char>(text[position]);
    if (lead < 0x80) return {kAsciiClasses[lead], 1, true};
    char32_t code_point = 0;
    const size_t length = utf8::decode_character(text.data() + position, text.size() - position, code_point);
    if (length == 0) return {UnicodeClass::other, 1, false};
    return {unicode_class(code_point), length, true};
}

// The end of the run of characters of `run_class` that starts at `position`.
size_t run_end(std::string_view text, size_t position, UnicodeClass run_class, size_t& invalid_bytes) {
    while (position < text.size()) {
        const Character c = character_at(text, position);
        if (c.unicode_class != run_class) break;
        invalid_bytes += c.valid ? 0 : 1;
        position += c.length;
    }
    return position;
}

// The length of the contraction at `rest` (which starts with an apostrophe), or 0.
size_t contraction_length(std::string_view rest) {
    if (rest.size() < 2) return 0;
    const char second = rest[1];
    if (second == 's' || second == 't' || second == 'm' || second == 'd') return 2;
    if (rest.size() < 3) return 0;
    const char third = rest[2];
    if ((second == 'r' && third == 'e') || (second == 'v' && third == 'e') || (second == 'l' && third == 'l'))
        return 3;
    return 0;
}

}  // namespace

bool Gpt2PreTokenizer::next(std::string_view& piece) {
    const size_t start = position_;
    if (start >= text_.size()) return false;
    size_t end = 0;
    if (text_[start] == '\'' && contraction_length(text_.substr(start)) > 0) {
        end = start + contraction_length(text_.substr(start));
    } else {
        const Character first = character_at(text_, start);
        size_t word_start = start;  // where the run of letters, numbers or others starts
        UnicodeClass word_class = first.unicode_class;
        if (text_[start] == ' ' && start + 1 < text_.size()) {
            const Character second = character_at(text_, start + 1);
            if (second.unicode_class != UnicodeClass::whitespace) {
                word_start = start + 1;
                word_class = second.unicode_class;
            }
        }
        if (word_class != UnicodeClass::whitespace) {
            end = run_end(text_, word_start, word_class, invalid_bytes_);
        } else {
            // A run of whitespace, and where its last character starts.
            size_t last = start;
            end = start;
            while (end < text_.size()) {
                const Character c = character_at(text_, end);
                if (c.unicode_class != UnicodeClass::whitespace) break;
                last = end;
                end += c.length;
            }
            if (end < text_.size() && last > start) end = last;  // \s+(?!\S): leave the last one
        }
    }
    piece = text_.substr(start, end - start);
    position_ = end;
    return true;
}

}  // namespace mixgpt
