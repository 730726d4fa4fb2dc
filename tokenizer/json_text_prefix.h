// The text of a JSON lines record cut short: when a line is longer than a tokenizer sample may
// take, the sample reads only its start, and takes from it the part of the record's text field
// that the start holds (tokenizer/document_readers.h).
#pragma once

#include <string>
#include <string_view>

namespace mixgpt {

// `head`: the start of a line holding one JSON object. Sets `text` to the string of its top-level
// field `key`, or to the part of that string `head` holds when the cut falls inside it. False when
// `head` is not the start of a JSON object or ends before that field's string begins.
bool json_text_prefix(std::string_view head, const std::string& key, std::string& text);

}  // namespace mixgpt
