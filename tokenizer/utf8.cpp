#include "tokenizer/utf8.h"

#include <cstdint>

namespace mixgpt::utf8 {
namespace {

bool is_continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

}  // namespace

size_t character_length(const char* text, size_t available) {
    char32_t ignored = 0;
    return decode_character(text, available, ignored);
}

size_t decode_character(const char* text, size_t available, char32_t& decoded) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(text);
    const unsigned char lead = bytes[0];
    if (lead < 0x80) {
        decoded = lead;
        return 1;
    }
    size_t length = 0;
    uint32_t code_point = 0;
    if ((lead & 0xE0) == 0xC0) {
        length = 2;
        code_point = lead & 0x1F;
    } else if ((lead & 0xF0) == 0xE0) {
        length = 3;
        code_point = lead & 0x0F;
    } else if ((lead & 0xF8) == 0xF0) {
        length = 4;
        code_point = lead & 0x07;
    } else {
        return 0;
    }
    if (available < length) return 0;
    for (size_t i = 1; i < length; ++i) {
        if (!is_continuation(bytes[i])) return 0;
        code_point = (code_point << 6) | (bytes[i] & 0x3F);
    }
    static constexpr uint32_t smallest[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (code_point < smallest[length]) return 0;                 // overlong form
    if (code_point >= 0xD800 && code_point <= 0xDFFF) return 0;  // surrogate
    if (code_point > 0x10FFFF) return 0;
    decoded = code_point;
    return length;
}

size_t valid_prefix_length(const char* text, size_t size) {
    size_t position = 0;
    while (position < size) {
        if (static_cast<unsigned char>(text[position]) < 0x80) {
            ++position;
            continue;
        }
        const size_t length = character_length(text + position, size - position);
        if (length == 0) break;
        position += length;
    }
    return position;
}

size_t invalid_byte_count(const char* text, size_t size) {
    size_t invalid = 0;
    for (size_t position = 0; position < size;) {
        position += valid_prefix_length(text + position, size - position);
        if (position < size) {
            ++invalid;
            ++position;
        }
    }
    return invalid;
}

size_t character_boundary_at_or_before(const char* text, size_t position) {
    for (size_t back = 0; back < 4 && back <= position; ++back) {
        if (!is_continuation(static_cast<unsigned char>(text[position - back]))) return position - back;
    }
    return position;
}

}  // namespace mixgpt::utf8
