// Collects the text of the open document and hands it out as TextSegments
// (tokenizer/corpus.h) of about TextSegment::kSegmentBytes.
#pragma once

#include <string>
#include <string_view>

#include "tokenizer/corpus.h"

namespace mixgpt {

// Where to cut `text` so that the tokens do not change, whatever the tokenizer: before its
// last space or newline that follows a character other than whitespace (no SentencePiece unit
// of tokenizer/encoder.h and no GPT-2 piece of tokenizer/gpt2_pretokenizer.h spans that
// point, and neither side's pieces depend on the other), else at the start of its last
// character (text.size() when there is none).
size_t segment_cut(std::string_view text);

class SegmentBuilder {
public:
    void begin() { open_ = true; }
    bool open() const { return open_; }
    std::string& text() { return text_; }
    bool full() const { return text_.size() >= TextSegment::kSegmentBytes; }

    // Moves a prefix of the text, cut by segment_cut, into `segment`; the document goes on.
    void take_part(TextSegment& segment);
    // Moves all of the text into `segment` and ends the document.
    void take_last(TextSegment& segment);

private:
    std::string text_;
    bool open_ = false;
    bool started_ = false;  // a part of the open document was taken
};

}  // namespace mixgpt
