#include "tokenizer/document_readers.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/input_stream.h"
#include "tokenizer/json_text_prefix.h"
#include "tokenizer/segment_builder.h"

namespace mixgpt {
namespace {

constexpr size_t kReadBytes = size_t{1} << 18;
constexpr size_t kSampleRegionBytes = size_t{1} << 16;  // a sample reads regions of about this size
constexpr size_t kMaxSampleRegions = 256;
constexpr size_t kUnlimitedLine = static_cast<size_t>(-1);

// Calls `add_line(piece)` for the lines of `file` until about `budget` bytes
// were taken or `sample` is full: the whole file when it fits, else regions
// spread evenly over it (from the start only for compressed files, which cannot
// seek). A region starting inside a line skips to the next one.
template <typename AddLine>
void sample_lines(const InputFile& file, size_t max_piece_bytes, size_t budget, const TrainingSample& sample,
                  AddLine add_line) {
    InputStream stream(file.path);
    const bool spread = stream.seekable() && file.bytes > budget;
    const size_t regions = spread ? std::clamp<size_t>(budget / kSampleRegionBytes, 1, kMaxSampleRegions) : 1;
    const size_t region_budget = budget / regions;
    for (size_t region = 0; region < regions; ++region) {
        const uint64_t offset = spread ? file.bytes * region / regions : 0;
        if (spread) stream.seek(offset);
        LineReader lines(stream, max_piece_bytes);
        LineReader::Piece piece;
        bool skipping = offset > 0;
        size_t taken = 0;
        while (taken < region_budget && !sample.full() && lines.next(piece)) {
            if (skipping) {
                skipping = !piece.line_end;
                continue;
            }
            taken += add_line(piece);
        }
    }
}

void set_end(TextSegment& segment, uint64_t offset, int64_t line) {
    segment.end = CorpusPosition{};
    segment.end.offset = offset;
    segment.end.line = line;
}

class TextReader : public DocumentReader {
public:
    TextReader(const InputFile& file, std::string separator, StreamUse use)
        : file_(file),
          separator_(std::move(separator)),
          stream_(file.path, use),
          lines_(stream_, TextSegment::kSegmentBytes) {}

    bool next(TextSegment& segment) override {
        return separator_.empty() ? next_whole_file(segment) : next_separated(segment);
    }

    uint64_t bytes_read() const override { return stream_.file_position(); }

    void skip_to(uint64_t offset, int64_t line) override {
        stream_.skip(offset);
        lines_.set_line_number(line);
    }

    void sample(size_t budget, TrainingSample& sample) override {
        sample_lines(file_, TextSegment::kSegmentBytes, budget, sample,
                     [&](const LineReader::Piece& piece) -> size_t {
                         if (piece.line_start && piece.line_end && is_separator(piece.text)) return 0;
                         const size_t before = sample.bytes();
                         sample.add_text(piece.text);
                         return sample.bytes() - before;
                     });
    }

private:
    bool next_whole_file(TextSegment& segment) {
        for (;;) {
            if (builder_.full()) {
                builder_.take_part(segment);
                return true;
            }
            if (at_end_) {
                if (!builder_.open()) return false;
                builder_.take_last(segment);
                set_end(segment, stream_.position(), 0);
                return true;
            }
            std::string& text = builder_.text();
            const size_t old_size = text.size();
            text.resize(old_size + kReadBytes);
            const size_t count = stream_.read(text.data() + old_size, kReadBytes);
            text.resize(old_size + count);
            if (count == 0)
                at_end_ = true;
            else
                builder_.begin();
        }
    }

    bool next_separated(TextSegment& segment) {
        LineReader::Piece piece;
        for (;;) {
            if (builder_.full()) {
                builder_.take_part(segment);
                return true;
            }
            if (!lines_.next(piece)) {
                if (!builder_.open()) return false;
                builder_.take_last(segment);
                set_end(segment, lines_.position(), lines_.line_number());
                return true;
            }
            if (piece.line_start && piece.line_end && is_separator(piece.text)) {
                if (!builder_.open()) continue;
                builder_.take_last(segment);
                set_end(segment, lines_.position(), lines_.line_number());
                return true;
            }
            builder_.begin();
            builder_.text().append(piece.text);
        }
    }

    bool is_separator(std::string_view line) const {
        if (separator_.empty()) return false;
        if (separator_ == kBlankLineSeparator)
            return line.find_first_not_of(" \t\r\n") == std::string_view::npos;
        if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        return line == separator_;
    }

    InputFile file_;
    std::string separator_;
    InputStream stream_;
    LineReader lines_;
    SegmentBuilder builder_;
    bool at_end_ = false;
};

class JsonlReader : public DocumentReader {
public:
    JsonlReader(const InputFile& file, std::string key, bool skip_bad_lines, StreamUse use)
        : file_(file),
          key_(std::move(key)),
          skip_bad_lines_(skip_bad_lines),
          stream_(file.path, use),
          lines_(stream_, kUnlimitedLine) {}

    bool next(TextSegment& segment) override {
        LineReader::Piece piece;
        for (;;) {
            if (builder_.open()) {
                if (builder_.full()) {
                    builder_.take_part(segment);
                } else {
                    builder_.take_last(segment);
                    set_end(segment, lines_.position(), lines_.line_number());
                    segment.end.skipped_lines = skipped_lines_;
                }
                return true;
            }
            if (!lines_.next(piece)) return false;
            std::string& text = builder_.text();
            const char* problem = extract_text(piece.text, text);
            if (problem != nullptr) {
                if (!skip_bad_lines_)
                    throw Error(file_.path + ":" + std::to_string(lines_.line_number()) + ": " + problem);
                ++skipped_lines_;
                continue;
            }
            if (!text.empty()) builder_.begin();
        }
    }

    uint64_t bytes_read() const override { return stream_.file_position(); }
    int64_t skipped_lines() const override { return skipped_lines_; }

    void skip_to(uint64_t offset, int64_t line) override {
        stream_.skip(offset);
        lines_.set_line_number(line);
    }

    // A file whose sampled lines all lack the key says so, rather than leaving an empty sample.
    // A line longer than `budget` is read no further than `budget` bytes: the part of its text
    // they hold is taken (tokenizer/json_text_prefix.h), so that memory stays within the budget.
    void sample(size_t budget, TrainingSample& sample) override {
        std::string text;
        const char* problem = nullptr;
        size_t added = 0;
        sample_lines(file_, std::max<size_t>(budget, 1), budget, sample, [&](const LineReader::Piece& piece) -> size_t {
            if (!piece.line_start) return 0;
            const char* line_problem = piece.line_end                                ? extract_text(piece.text, text)
                                       : json_text_prefix(piece.text, key_, text) ? nullptr
                                                                                  : cut_line_problem_.c_str();
            if (line_problem != nullptr) {
                problem = line_problem;
                return 0;
            }
            const size_t before = sample.bytes();
            sample.add_text(text);
            added += sample.bytes() - before;
            return sample.bytes() - before;
        });
        if (added == 0 && problem != nullptr)
            throw Error(file_.path + ": no line read holds text: " + problem);
    }

private:
    // Sets `text` to the record's field; returns what is wrong with the line
    // (nullptr when nothing). Blank lines hold an empty document.
    const char* extract_text(std::string_view line, std::string& text) const {
        text.clear();
        if (line.find_first_not_of(" \t\r\n") == std::string_view::npos) return nullptr;
        const auto record = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
        if (record.is_discarded()) return "not valid JSON";
        if (!record.is_object()) return "not a JSON object";
        const auto field = record.find(key_);
        if (field == record.end() || !field->is_string()) return missing_key_message_.c_str();
        text = field->get_ref<const std::string&>();
        return nullptr;
    }

    InputFile file_;
    std::string key_;
    std::string missing_key_message_ =
        "no string field '" + key_ + "' (--jsonl-key names the field holding the text)";
    std::string cut_line_problem_ = "a line longer than the tokenizer sample whose start holds no string field '" +
                                    key_ + "' (--jsonl-key names the field holding the text)";
    bool skip_bad_lines_;
    InputStream stream_;
    LineReader lines_;
    SegmentBuilder builder_;
    int64_t skipped_lines_ = 0;
};

class MemoryReader : public DocumentReader {
public:
    explicit MemoryReader(std::shared_ptr<const std::vector<std::string>> documents)
        : documents_(std::move(documents)) {}

    bool next(TextSegment& segment) override {
        for (;;) {
            if (builder_.open()) {
                if (builder_.full()) {
                    builder_.take_part(segment);
                } else {
                    builder_.take_last(segment);
                    set_end(segment, next_, 0);
                }
                return true;
            }
            if (next_ == documents_->size()) return false;
            const std::string& document = (*documents_)[next_++];
            bytes_read_ += document.size();
            if (document.empty()) continue;
            builder_.text() = document;
            builder_.begin();
        }
    }

    uint64_t bytes_read() const override { return bytes_read_; }

    void skip_to(uint64_t offset, int64_t) override {
        MIXGPT_REQUIRE(offset <= documents_->size(), "in-memory corpus: cannot resume past its end");
        for (; next_ < offset; ++next_) bytes_read_ += (*documents_)[next_].size();
    }

    // Takes documents spread evenly over the list until about `budget` bytes.
    void sample(size_t budget, TrainingSample& sample) override {
        uint64_t total = 0;
        for (const auto& document : *documents_) total += document.size();
        uint64_t seen = 0, taken = 0;
        for (const auto& document : *documents_) {
            if (sample.full()) return;
            seen += document.size();
            if (total > budget && static_cast<double>(taken) >= static_cast<double>(budget) * seen / total)
                continue;
            sample.add_text(document);
            taken += document.size();
        }
    }

private:
    std::shared_ptr<const std::vector<std::string>> documents_;
    size_t next_ = 0;
    uint64_t bytes_read_ = 0;
    SegmentBuilder builder_;
};

}  // namespace

std::unique_ptr<DocumentReader> open_text_reader(const InputFile& file, const std::string& doc_separator,
                                                 StreamUse use) {
    return std::make_unique<TextReader>(file, doc_separator, use);
}

std::unique_ptr<DocumentReader> open_jsonl_reader(const InputFile& file, const std::string& key,
                                                  bool skip_bad_lines, StreamUse use) {
    return std::make_unique<JsonlReader>(file, key, skip_bad_lines, use);
}

std::unique_ptr<DocumentReader> open_memory_reader(
    std::shared_ptr<const std::vector<std::string>> documents) {
    return std::make_unique<MemoryReader>(std::move(documents));
}

}  // namespace mixgpt
