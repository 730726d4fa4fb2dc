#include "tokenizer/segment_builder.h"

#include <cstring>

#include "tokenizer/utf8.h"

namespace mixgpt {

size_t segment_cut(std::string_view text) {
    if (text.empty()) return 0;
    if (const void* newline = memrchr(text.data(), '\n', text.size()))
        return static_cast<size_t>(static_cast<const char*>(newline) - text.data()) + 1;
    for (size_t position = text.size() - 1; position > 0; --position) {
        if (text[position] == ' ' && text[position - 1] != ' ') return position;
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
