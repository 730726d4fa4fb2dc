// Strict UTF-8 scanning (RFC 3629: no overlong forms, no surrogates, nothing
// above U+10FFFF), the same rule SentencePiece applies. The tokenizer passes
// only valid runs to SentencePiece and encodes every other byte as a
// byte-fallback token, so no input byte is ever replaced or dropped.
#pragma once

#include <cstddef>

namespace mixgpt::utf8 {

// Length in bytes of the valid UTF-8 character starting at `text` (1 to 4),
// or 0 when the bytes there do not start a valid character. `available` > 0.
size_t character_length(const char* text, size_t available);
// The same, and the character's code point in `code_point` when valid.
size_t decode_character(const char* text, size_t available, char32_t& code_point);

// Length of the longest prefix of [text, text + size) that is valid UTF-8.
size_t valid_prefix_length(const char* text, size_t size);

// Bytes of [text, text + size) that are not part of a valid UTF-8 character
// (what the tokenizer turns into byte-fallback tokens).
size_t invalid_byte_count(const char* text, size_t size);

// Start of the last character that begins at or before `position` (a byte
// that is not a continuation byte 10xxxxxx, or `position` when none is within
// three bytes), so that cutting there does not split a character.
size_t character_boundary_at_or_before(const char* text, size_t position);

}  // namespace mixgpt::utf8
