// A corpus: the documents of a list of inputs, streamed as text segments of
// bounded size, and a bounded sample of its lines to train a tokenizer on.
//
// Inputs are files, standard input ("-"), directories or glob patterns. A
// directory is searched recursively in sorted order and gives only its
// text-like files (.txt, .text, .jsonl, .ndjson, .json, each optionally
// compressed: .gz, .zst, .xz) and those matching an `include` pattern; hidden
// entries and the rest are left, and listed. Every input is plain or
// compressed (gzip, zstd, xz: detected from the content), and one that looks
// binary (tokenizer/input_sniff.h) is refused, or left with `skip_binary`. Every
// reader judges all the text it reads (tokenizer/text_check.h), so an input that
// stops being text after its head is refused when reading reaches it; with
// `skip_binary` each input file is read through once when the inputs are resolved,
// and left when any part of it is not text.
//
// A file is JSON lines when its name ends in .jsonl or .ndjson (then
// optionally .gz/.zst/.xz), or in .json or is standard input and its first
// line is a JSON object; else plain text, unless a format is forced. Plain
// text holds one document per file, or documents separated by a delimiter
// line (`doc_separator`), or by blank lines (doc_separator "blank-line"). A
// JSONL line is one document: the string field `jsonl_key` of a JSON object.
// Empty documents are skipped.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/byte_source.h"
#include "tokenizer/decompressor.h"
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
    std::vector<std::string>
        include;               // file-name patterns (fnmatch) taken from directories besides text-like ones
    bool skip_binary = false;  // leave binary-looking inputs instead of failing
};

struct InputFile {
    std::string path;                        // "-": standard input
    InputFormat format = InputFormat::text;  // text or jsonl, never automatic
    uint64_t bytes = 0;                      // size on disk (0 for standard input: unknown)
    Compression compression = Compression::none;
};

struct LeftInput {
    std::string path;
    std::string reason;  // "hidden", "not a text-like name", "binary: a Parquet file ..."
};

struct ResolvedInputs {
    std::vector<InputFile> files;  // taken, in order
    std::vector<LeftInput> left;   // found in directories (or binary, with skip_binary) and not taken
    // Lines for people: what was taken and what was left (and how to take it).
    std::vector<std::string> describe() const;
};

// Expands the inputs into files; throws Error for a missing input, a pattern
// matching nothing, a directory without files to take, a binary-looking input
// (unless skip_binary) or a .json file that is not JSON lines.
ResolvedInputs resolve_inputs(const CorpusOptions& options);

// Where the corpus stands after a document: the next document begins at text
// byte `offset` (after decompression) of input `input`, on line `line` + 1.
// Corpus::seek(position) continues from there exactly (prepare --resume).
struct CorpusPosition {
    int64_t input = 0;
    uint64_t offset = 0;  // text bytes of the input before the position (entries, for in-memory documents)
    int64_t line = 0;     // lines of the input before the position
    int64_t next_document = 0;
    int64_t skipped_lines = 0;  // bad JSONL lines skipped before the position, over the whole corpus
};

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
    CorpusPosition end;    // on a last segment: where the corpus stands after the document
};

// The documents of one input.
class DocumentReader {
public:
    virtual ~DocumentReader() = default;
    // Fills text, first, last and, on a last segment, end.offset, end.line and end.skipped_lines
    // (of this input); false at the end.
    virtual bool next(TextSegment& segment) = 0;
    virtual uint64_t bytes_read() const = 0;  // input consumed so far, in the units of Corpus::total_bytes
    virtual int64_t skipped_lines() const { return 0; }
    // Continues after `offset` text bytes (or entries) and `line` lines, a document boundary that
    // next() reported. Only before the first next().
    virtual void skip_to(uint64_t offset, int64_t line) = 0;
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
    // Continues from a position a last segment reported (by this corpus or one of the same inputs).
    void seek(const CorpusPosition& position);
    // How next() opens inputs: streaming (the default: standard input is then read to its end,
    // once) or replayable (a first look, before the reading proper).
    void set_stream_use(StreamUse use) { stream_use_ = use; }
    // A training sample of about `budget` bytes, each input contributing in
    // proportion to its size (an input smaller than its share is taken whole).
    TrainingSample sample(size_t budget) const;

    uint64_t total_bytes() const { return total_bytes_; }  // of the inputs whose size is known
    bool sizes_known() const { return sizes_known_; }      // false with standard input
    uint64_t bytes_read() const;
    int64_t skipped_lines() const;
    const std::string& description() const { return description_; }  // for messages

private:
    bool next_text_segment(TextSegment& segment);  // of reader_; an input that is not text says so

    struct Input {
        std::function<std::unique_ptr<DocumentReader>(StreamUse)> open;
        uint64_t bytes = 0;
        bool size_known = true;
    };
    std::vector<Input> inputs_;
    uint64_t total_bytes_ = 0;
    bool sizes_known_ = true;
    std::string description_;
    size_t next_input_ = 0;
    std::unique_ptr<DocumentReader> reader_;
    StreamUse stream_use_ = StreamUse::streaming;
    uint64_t finished_bytes_ = 0;   // bytes of the inputs already read to the end
    int64_t finished_skipped_ = 0;  // skipped lines of the inputs already read to the end
    int64_t next_document_ = 0;
    bool skip_binary_ = false;  // (CorpusOptions) an input not text is refused without a hint
};

}  // namespace mixgpt
