#include "tokenizer/segment_builder.h"

#include "tokenizer/unicode_classes.h"
#include "tokenizer/utf8.h"

namespace mixgpt {

namespace {

// True when `text` ends with a whitespace character (the White_Space property; an invalid
// UTF-8 byte is not one).
bool ends_with_whitespace(std::string_view text) {
    const size_t start = utf8::character_boundary_at_or_before(text.data(), text.size() - 1);
    char32_t code_point = 0;
    const size_t length = utf8::decode_character(text.data() + start, text.size() - start, code_point);
    return length == text.size() - start && unicode_class(code_point) == UnicodeClass::whitespace;
}

}  // namespace

size_t segment_cut(std::string_view text) {
    if (text.empty()) return 0;
    for (size_t position = text.size() - 1; position > 0; --position) {
        if ((text[position] == ' ' || text[position] == '\n') &&
            !ends_with_whitespace(text.substr(0, position)))
            return position;
    }
    const size_t boundary = utf8::character_boundary_at_or_before(text.data(), text.size() - 1);
    return boundary > 0 ? boundary : text.size();
}

void SegmentBuilder::take_part(TextSegment& segment) {
    const size_t cut = segment_cut(text_);
    segment.text.assign(text_, 0, cut);
    text_.erase(0, cut);
    segment.first = !started_;
    segment.last = false;
    started_ = true;
}

void SegmentBuilder::take_last(TextSegment& segment) {
    segment.text.swap(text_);
    text_.clear();
    segment.first = !started_;
    segment.last = true;
    started_ = false;
    open_ = false;
}

}  // namespace mixgpt
