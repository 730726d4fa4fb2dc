// The DocumentReader of each input kind (tokenizer/corpus.h): plain text with
// one document per file, plain text with separator lines, JSONL, and
// documents held in memory.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/corpus.h"

namespace mixgpt {

std::unique_ptr<DocumentReader> open_text_reader(const InputFile& file, const std::string& doc_separator,
                                                 StreamUse use);
std::unique_ptr<DocumentReader> open_jsonl_reader(const InputFile& file, const std::string& key,
                                                  bool skip_bad_lines, StreamUse use);
std::unique_ptr<DocumentReader> open_memory_reader(std::shared_ptr<const std::vector<std::string>> documents);

}  // namespace mixgpt
