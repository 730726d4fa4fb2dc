// A corpus: the documents of a list of inputs, streamed as text segments of
// bounded size, and a bounded sample of its lines to train a tokenizer on.
//
// Inputs are files, directories (searched recursively, hidden entries
// skipped, in sorted order) or glob patterns. A file is plain text or JSONL
// (by extension: .jsonl, .ndjson, optionally followed by .gz, unless a format
// is forced), plain or gzip-compressed. Plain text holds one document per
// file, or documents separated by a delimiter line (`doc_separator`), or by
// blank lines (doc_separator "blank-line"). A JSONL line is one document: the
// string field `jsonl_key` of a JSON object. Empty documents are skipped.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/tokenizer_trainer.h"

namespace mixgpt {

enum class InputFormat { automatic, text, jsonl };
InputFormat parse_input_format(const std::string& name);  // "auto", "text" or "jsonl"

inline constexpr const char* kBlankLineSeparator = "blank-line";

struct CorpusOptions {
    std::vector<std::string> inputs;  // files, directories or glob patterns
    InputFormat format = InputFormat::automatic;
    std::string doc_separator;  // empty: one document per file
    std::string jsonl_key = "text";
    bool skip_bad_lines = false;  // skip and count bad JSONL lines instead of failing
};

struct InputFile {
    std::string path;
    InputFormat format = InputFormat::text;  // text or jsonl, never automatic
    uint64_t bytes = 0;                      // size on disk
};

// Expands the inputs into files; throws Error for a missing input, a pattern
// matching nothing or a directory without files.
std::vector<InputFile> resolve_inputs(const CorpusOptions& options);

// A piece of one document. Documents are cut into segments of about
// kSegmentBytes, before a space or newline that follows a non-whitespace character
// (a boundary of every tokenizer's pieces, so the cut does not change the tokens;
// tokenizer/segment_builder.h), else at a character boundary. A document's last
// segment may be empty.
struct TextSegment {
    static constexpr size_t kSegmentBytes = size_t{1} << 20;
    std::string text;
    int64_t document = 0;  // index of the document in the corpus
    bool first = false;    // begins its document
    bool last = false;     // ends its document
};

// The documents of one input.
class DocumentReader {
public:
    virtual ~DocumentReader() = default;
    virtual bool next(TextSegment& segment) = 0;  // fills text, first, last; false at the end
    virtual uint64_t bytes_read() const = 0;  // input consumed so far, in the units of Corpus::total_bytes
    virtual int64_t skipped_lines() const { return 0; }
    // Adds about `budget` bytes of lines, spread over the input, to `sample`.
    virtual void sample(size_t budget, TrainingSample& sample) = 0;
};

class Corpus {
public:
    static Corpus from_files(std::vector<InputFile> files, const CorpusOptions& options);
    // In-memory documents (the KJV chapters, tests); `name` appears in messages.
    static Corpus from_documents(std::vector<std::string> documents, const std::string& name);

    // The next segment; documents are numbered in order over all inputs.
    bool next(TextSegment& segment);
    // A training sample of about `budget` bytes, each input contributing in
    // proportion to its size (an input smaller than its share is taken whole).
    TrainingSample sample(size_t budget) const;

    uint64_t total_bytes() const { return total_bytes_; }
    uint64_t bytes_read() const;
    int64_t skipped_lines() const;
    const std::string& description() const { return description_; }  // for messages

private:
    struct Input {
        std::function<std::unique_ptr<DocumentReader>()> open;
        uint64_t bytes = 0;
    };
    std::vector<Input> inputs_;
    uint64_t total_bytes_ = 0;
    std::string description_;
    size_t next_input_ = 0;
    std::unique_ptr<DocumentReader> reader_;
    uint64_t finished_bytes_ = 0;   // bytes of the inputs already read to the end
    int64_t finished_skipped_ = 0;  // skipped lines of the inputs already read to the end
    int64_t next_document_ = 0;
};

}  // namespace mixgpt
