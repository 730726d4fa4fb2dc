#include "tokenizer/corpus.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "core/error.h"
#include "tokenizer/document_readers.h"

namespace mixgpt {
namespace fs = std::filesystem;
namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
    return text.size() >= suffix.size() &&
           text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

InputFormat format_of(const std::string& path, InputFormat forced) {
    if (forced != InputFormat::automatic) return forced;
    for (const char* extension : {".jsonl", ".ndjson"}) {
        if (ends_with(path, extension) || ends_with(path, std::string(extension) + ".gz"))
            return InputFormat::jsonl;
    }
    return InputFormat::text;
}

bool is_hidden(const fs::path& path) {
    const std::string name = path.filename().string();
    return !name.empty() && name[0] == '.';
}

void add_file(const fs::path& path, InputFormat forced, std::vector<InputFile>& files) {
    std::error_code error;
    const auto bytes = fs::file_size(path, error);
    if (error) throw Error(path.string() + ": cannot read (" + error.message() + ")");
    files.push_back({path.string(), format_of(path.string(), forced), static_cast<uint64_t>(bytes)});
}

void add_directory(const fs::path& directory, InputFormat forced, std::vector<InputFile>& files) {
    std::vector<fs::path> found;
    std::error_code error;
    fs::recursive_directory_iterator entry(directory, error), end;
    for (; !error && entry != end; entry.increment(error)) {
        if (is_hidden(entry->path())) {
            if (entry->is_directory()) entry.disable_recursion_pending();
            continue;
        }
        if (entry->is_regular_file()) found.push_back(entry->path());
    }
    if (error) throw Error(directory.string() + ": cannot list directory (" + error.message() + ")");
    if (found.empty()) throw Error(directory.string() + ": directory holds no files");
    std::sort(found.begin(), found.end());
    for (const auto& path : found) add_file(path, forced, files);
}

void add_path(const std::string& path, InputFormat forced, std::vector<InputFile>& files) {
    std::error_code error;
    const auto status = fs::status(path, error);
    if (error || !fs::exists(status)) throw Error(path + ": no such file or directory");
    if (fs::is_directory(status))
        add_directory(path, forced, files);
    else
        add_file(path, forced, files);
}

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

}  // namespace

InputFormat parse_input_format(const std::string& name) {
    if (name == "auto") return InputFormat::automatic;
    if (name == "text") return InputFormat::text;
    if (name == "jsonl") return InputFormat::jsonl;
    throw Error("unknown input format '" + name + "' (expected auto, text or jsonl)");
}

std::vector<InputFile> resolve_inputs(const CorpusOptions& options) {
    MIXGPT_REQUIRE(!options.inputs.empty(), "no input given (files, directories or glob patterns)");
    std::vector<InputFile> files;
    for (const std::string& input : options.inputs) {
        if (input.find_first_of("*?[") != std::string::npos) {
            for (const std::string& path : expand_glob(input)) add_path(path, options.format, files);
        } else {
            add_path(input, options.format, files);
        }
    }
    return files;
}

Corpus Corpus::from_files(std::vector<InputFile> files, const CorpusOptions& options) {
    Corpus corpus;
    for (const InputFile& file : files) {
        Input input;
        input.bytes = file.bytes;
        if (file.format == InputFormat::jsonl) {
            input.open = [file, key = options.jsonl_key, skip = options.skip_bad_lines] {
                return open_jsonl_reader(file, key, skip);
            };
        } else {
            input.open = [file, separator = options.doc_separator] {
                return open_text_reader(file, separator);
            };
        }
        corpus.total_bytes_ += file.bytes;
        corpus.inputs_.push_back(std::move(input));
    }
    corpus.description_ = files.size() == 1 ? files[0].path : std::to_string(files.size()) + " input files";
    return corpus;
}

Corpus Corpus::from_documents(std::vector<std::string> documents, const std::string& name) {
    auto shared = std::make_shared<const std::vector<std::string>>(std::move(documents));
    Corpus corpus;
    Input input;
    for (const auto& document : *shared) input.bytes += document.size();
    input.open = [shared] { return open_memory_reader(shared); };
    corpus.total_bytes_ = input.bytes;
    corpus.inputs_.push_back(std::move(input));
    corpus.description_ = name;
    return corpus;
}

bool Corpus::next(TextSegment& segment) {
    for (;;) {
        if (!reader_) {
            if (next_input_ == inputs_.size()) return false;
            reader_ = inputs_[next_input_].open();
        }
        if (reader_->next(segment)) {
            segment.document = next_document_;
            if (segment.last) ++next_document_;
            return true;
        }
        finished_bytes_ += inputs_[next_input_].bytes;
        finished_skipped_ += reader_->skipped_lines();
        reader_.reset();
        ++next_input_;
    }
}

TrainingSample Corpus::sample(size_t budget) const {
    TrainingSample sample;
    if (total_bytes_ == 0) return sample;  // empty inputs: no share to divide
    for (const Input& input : inputs_) {
        const size_t share =
            static_cast<size_t>(static_cast<long double>(budget) * input.bytes / total_bytes_);
        if (share > 0) input.open()->sample(share, sample);
    }
    return sample;
}

uint64_t Corpus::bytes_read() const { return finished_bytes_ + (reader_ ? reader_->bytes_read() : 0); }

int64_t Corpus::skipped_lines() const { return finished_skipped_ + (reader_ ? reader_->skipped_lines() : 0); }

}  // namespace mixgpt
