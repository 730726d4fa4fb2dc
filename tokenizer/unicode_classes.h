// The character classes of GPT-2's pre-tokenisation regex (tokenizer/gpt2_pretokenizer.h):
// letter (\p{L}), number (\p{N}), whitespace (\s: the White_Space property) and other. The
// table is generated from the Unicode Character Database by scripts/make_unicode_classes.py
// (unicode_classes_table.inc, Unicode 15.0.0).
#pragma once

#include <cstdint>

namespace mixgpt {

enum class UnicodeClass : uint8_t { other, letter, number, whitespace };

// Any value, including surrogates and values above U+10FFFF (other).
UnicodeClass unicode_class(char32_t code_point);

}  // namespace mixgpt
