#include "tokenizer/corpus.h"

#include <fnmatch.h>
#include <glob.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/error.h"
#include "core/log.h"
#include "tokenizer/document_readers.h"
#include "tokenizer/input_sniff.h"
#include "tokenizer/input_stream.h"

namespace mixgpt {
namespace fs = std::filesystem;
namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
    return text.size() >= suffix.size() &&
           text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The name without a compression suffix (.gz, .zst, .xz).
std::string uncompressed_name(const std::string& name) {
    for (const char* suffix : {".gz", ".zst", ".xz"}) {
        if (ends_with(name, suffix)) return name.substr(0, name.size() - std::strlen(suffix));
    }
    return name;
}

bool is_text_like(const std::string& name) {
    const std::string base = uncompressed_name(name);
    for (const char* extension : {".txt", ".text", ".jsonl", ".ndjson", ".json"}) {
        if (ends_with(base, extension)) return true;
    }
    return false;
}

// Why the text of `path` is not text, read to its end (tokenizer/text_check.h), or "".
std::string not_text_reason(const std::string& path) {
    InputStream stream(path);
    std::string buffer(size_t{1} << 18, '\0');
    try {
        while (stream.read(buffer.data(), buffer.size()) > 0) {
        }
    } catch (const NotTextError& error) {
        return error.reason();
    }
    return "";
}

bool is_hidden(const fs::path& path) {
    const std::string name = path.filename().string();
    return !name.empty() && name[0] == '.';
}

class InputCollector {
public:
    explicit InputCollector(const CorpusOptions& options) : options_(options) {}

    void add_path(const std::string& path) {
        if (path == kStandardInputPath) return add_file(path, 0);
        std::error_code error;
        const auto status = fs::status(path, error);
        if (error || !fs::exists(status)) throw Error(path + ": no such file or directory");
        if (fs::is_directory(status)) return add_directory(path);
        const auto bytes = fs::file_size(path, error);
        if (error) throw Error(path + ": cannot read (" + error.message() + ")");
        add_file(path, static_cast<uint64_t>(bytes));
    }

    ResolvedInputs take() { return std::move(result_); }

private:
    bool included(const fs::path& path) const {
        const std::string name = path.filename().string();
        if (is_text_like(name)) return true;
        for (const std::string& pattern : options_.include) {
            if (fnmatch(pattern.c_str(), name.c_str(), 0) == 0) return true;
        }
        return false;
    }

    void add_file(const std::string& path, uint64_t bytes) {
        const InputSniff sniff = sniff_input(path);
        if (!sniff.binary.empty() && !options_.skip_binary)
            throw Error(path + ": looks like " + sniff.binary + ", not text (--skip-binary leaves such inputs)");
        if (!sniff.not_text.empty() && !options_.skip_binary)
            throw Error(path + ": " + sniff.not_text + " (--skip-binary leaves such inputs)");
        // Left inputs are judged over all their text; standard input cannot be read twice.
        const std::string not_text = !sniff.binary.empty() ? sniff.binary
                                     : !sniff.not_text.empty() || !options_.skip_binary || path == kStandardInputPath
                                         ? sniff.not_text
                                         : not_text_reason(path);
        if (!not_text.empty()) {
            result_.left.push_back({path, "binary: " + not_text});
            return;
        }
        InputFormat format = options_.format;
        const std::string name = uncompressed_name(fs::path(path).filename().string());
        if (format == InputFormat::automatic) {
            if (ends_with(name, ".jsonl") || ends_with(name, ".ndjson")) {
                format = InputFormat::jsonl;
            } else if (ends_with(name, ".json")) {
                if (!sniff.json_lines)
                    throw Error(path +
                                ": not JSON lines (its first line is not a JSON object); --format text takes "
                                "it as text");
                format = InputFormat::jsonl;
            } else {
                format =
                    path == kStandardInputPath && sniff.json_lines ? InputFormat::jsonl : InputFormat::text;
            }
        }
        result_.files.push_back({path, format, bytes, sniff.compression});
    }

    void add_directory(const fs::path& directory) {
        std::vector<fs::path> found;
        std::error_code error;
        fs::recursive_directory_iterator entry(directory, error), end;
        for (; !error && entry != end; entry.increment(error)) {
            if (is_hidden(entry->path())) {
                if (entry->is_directory()) entry.disable_recursion_pending();
                result_.left.push_back({entry->path().string(), "hidden"});
                continue;
            }
            if (!entry->is_regular_file()) continue;
            if (included(entry->path()))
                found.push_back(entry->path());
            else
                result_.left.push_back({entry->path().string(), "not a text-like name"});
        }
        if (error) throw Error(directory.string() + ": cannot list directory (" + error.message() + ")");
        if (found.empty())
            throw Error(directory.string() +
                        ": directory holds no text-like files (.txt, .jsonl, .json, .ndjson, "
                        "optionally .gz/.zst/.xz; --include GLOB takes others)");
        std::sort(found.begin(), found.end());
        for (const auto& path : found) {
            const auto bytes = fs::file_size(path, error);
            if (error) throw Error(path.string() + ": cannot read (" + error.message() + ")");
            add_file(path.string(), static_cast<uint64_t>(bytes));
        }
    }

    const CorpusOptions& options_;
    ResolvedInputs result_;
};

std::vector<std::string> expand_glob(const std::string& pattern) {
    glob_t matches{};
    const int status = glob(pattern.c_str(), 0, nullptr, &matches);
    std::vector<std::string> paths;
    if (status == 0) paths.assign(matches.gl_pathv, matches.gl_pathv + matches.gl_pathc);
    globfree(&matches);
    if (status == GLOB_NOMATCH || paths.empty()) throw Error(pattern + ": no file matches this pattern");
    if (status != 0) throw Error(pattern + ": cannot expand the pattern");
    return paths;
}

std::string list_some(const std::vector<std::string>& names, size_t shown) {
    std::string text;
    for (size_t i = 0; i < names.size() && i < shown; ++i) text += (i > 0 ? ", " : "") + names[i];
    if (names.size() > shown) text += format(", and %zu more", names.size() - shown);
    return text;
}

}  // namespace

InputFormat parse_input_format(const std::string& name) {
    if (name == "auto") return InputFormat::automatic;
    if (name == "text") return InputFormat::text;
    if (name == "jsonl") return InputFormat::jsonl;
    throw Error("unknown input format '" + name + "' (expected auto, text or jsonl)");
}

ResolvedInputs resolve_inputs(const CorpusOptions& options) {
    MIXGPT_REQUIRE(!options.inputs.empty(), "no input given (files, directories or glob patterns)");
    MIXGPT_REQUIRE(std::count(options.inputs.begin(), options.inputs.end(), kStandardInputPath) <= 1,
                   "standard input ('-') can be given once");
    InputCollector collector(options);
    for (const std::string& input : options.inputs) {
        if (input != kStandardInputPath && input.find_first_of("*?[") != std::string::npos) {
            for (const std::string& path : expand_glob(input)) collector.add_path(path);
        } else {
            collector.add_path(input);
        }
    }
    ResolvedInputs resolved = collector.take();
    MIXGPT_REQUIRE(!resolved.files.empty(),
                   "no input left to read: every input looks binary (--skip-binary)");
    return resolved;
}

std::vector<std::string> ResolvedInputs::describe() const {
    constexpr size_t kShown = 10;
    uint64_t bytes = 0;
    std::vector<std::string> names;
    for (const InputFile& file : files) {
        bytes += file.bytes;
        names.push_back(file.path + (file.compression == Compression::none
                                         ? ""
                                         : std::string(" (") + compression_name(file.compression) + ")"));
    }
    std::vector<std::string> lines = {format("inputs: took %zu file%s, %.1f MB: %s", files.size(),
                                             files.size() == 1 ? "" : "s", static_cast<double>(bytes) / 1e6,
                                             list_some(names, kShown).c_str())};
    if (!left.empty()) {
        std::vector<std::string> reasons;
        for (const LeftInput& input : left) reasons.push_back(input.path + " (" + input.reason + ")");
        lines.push_back(format("inputs: left %zu: %s; --include GLOB takes other names", left.size(),
                               list_some(reasons, kShown).c_str()));
    }
    return lines;
}

Corpus Corpus::from_files(std::vector<InputFile> files, const CorpusOptions& options) {
    Corpus corpus;
    for (const InputFile& file : files) {
        Input input;
        input.bytes = file.bytes;
        input.size_known = file.path != kStandardInputPath;
        if (file.format == InputFormat::jsonl) {
            input.open = [file, key = options.jsonl_key, skip = options.skip_bad_lines](StreamUse use) {
                return open_jsonl_reader(file, key, skip, use);
            };
        } else {
            input.open = [file, separator = options.doc_separator](StreamUse use) {
                return open_text_reader(file, separator, use);
            };
        }
        corpus.total_bytes_ += file.bytes;
        corpus.sizes_known_ = corpus.sizes_known_ && input.size_known;
        corpus.inputs_.push_back(std::move(input));
    }
    corpus.description_ = files.size() == 1 ? files[0].path : std::to_string(files.size()) + " input files";
    corpus.skip_binary_ = options.skip_binary;
    return corpus;
}

Corpus Corpus::from_documents(std::vector<std::string> documents, const std::string& name) {
    auto shared = std::make_shared<const std::vector<std::string>>(std::move(documents));
    Corpus corpus;
    Input input;
    for (const auto& document : *shared) input.bytes += document.size();
    input.open = [shared](StreamUse) { return open_memory_reader(shared); };
    corpus.total_bytes_ = input.bytes;
    corpus.inputs_.push_back(std::move(input));
    corpus.description_ = name;
    return corpus;
}

bool Corpus::next(TextSegment& segment) {
    for (;;) {
        if (!reader_) {
            if (next_input_ == inputs_.size()) return false;
            reader_ = inputs_[next_input_].open(stream_use_);
        }
        if (next_text_segment(segment)) {
            segment.document = next_document_;
            if (segment.last) {
                ++next_document_;
                segment.end.input = static_cast<int64_t>(next_input_);
                segment.end.next_document = next_document_;
                segment.end.skipped_lines += finished_skipped_;
            }
            return true;
        }
        finished_bytes_ += inputs_[next_input_].bytes;
        finished_skipped_ += reader_->skipped_lines();
        reader_.reset();
        ++next_input_;
    }
}

bool Corpus::next_text_segment(TextSegment& segment) {
    try {
        return reader_->next(segment);
    } catch (const NotTextError& error) {
        if (skip_binary_) throw;
        throw Error(std::string(error.what()) + " (--skip-binary leaves such inputs)");
    }
}

void Corpus::seek(const CorpusPosition& position) {
    MIXGPT_REQUIRE(position.input >= 0 && static_cast<size_t>(position.input) <= inputs_.size(),
                   description_ + ": cannot resume at input " + std::to_string(position.input) + " of " +
                       std::to_string(inputs_.size()));
    reader_.reset();
    next_input_ = static_cast<size_t>(position.input);
    finished_bytes_ = 0;
    for (size_t i = 0; i < next_input_; ++i) finished_bytes_ += inputs_[i].bytes;
    finished_skipped_ = position.skipped_lines;
    next_document_ = position.next_document;
    if (next_input_ < inputs_.size()) {
        reader_ = inputs_[next_input_].open(stream_use_);
        reader_->skip_to(position.offset, position.line);
    }
}

TrainingSample Corpus::sample(size_t budget) const {
    TrainingSample sample(0);
    // An input of unknown size (standard input) counts as one of `budget` bytes.
    long double total = 0;
    for (const Input& input : inputs_) total += input.size_known ? input.bytes : budget;
    if (total == 0) return sample;  // empty inputs: no share to divide
    for (const Input& input : inputs_) {
        const long double bytes = input.size_known ? input.bytes : budget;
        const size_t share = static_cast<size_t>(static_cast<long double>(budget) * bytes / total);
        sample.raise_budget(share);
        if (share > 0) input.open(StreamUse::replayable)->sample(share, sample);
    }
    return sample;
}

uint64_t Corpus::bytes_read() const { return finished_bytes_ + (reader_ ? reader_->bytes_read() : 0); }

int64_t Corpus::skipped_lines() const { return finished_skipped_ + (reader_ ? reader_->skipped_lines() : 0); }

}  // namespace mixgpt
