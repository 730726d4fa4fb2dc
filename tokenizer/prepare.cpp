#include "tokenizer/prepare.h"

#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <optional>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "tokenizer/dataset_writer.h"
#include "tokenizer/document_split.h"
#include "tokenizer/kjv_corpus.h"
#include "tokenizer/parallel_encoder.h"

namespace mixgpt {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kBatchBytesPerThread = size_t{4} << 20;
constexpr size_t kMinBatchBytes = size_t{16} << 20;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

void check_options(const PrepareOptions& options) {
    const bool builtin = !options.builtin_corpus.empty(), has_inputs = !options.corpus.inputs.empty();
    MIXGPT_REQUIRE(!builtin || options.builtin_corpus == "kjv",
                   "unknown corpus '" + options.builtin_corpus + "' (the built-in corpus is kjv)");
    MIXGPT_REQUIRE(!(builtin && has_inputs), "give either --corpus or input files, not both");
    MIXGPT_REQUIRE(builtin || has_inputs,
                   "no input: give files, directories or glob patterns, or --corpus kjv");
    MIXGPT_REQUIRE(builtin || !options.output_directory.empty(), "--output is required with input files");
    MIXGPT_REQUIRE(options.val_fraction >= 0 && options.val_fraction < 1,
                   format("--val-fraction %g must be in [0, 1)", options.val_fraction));
    MIXGPT_REQUIRE(options.tokenizer_sample_bytes > 0, "--tokenizer-sample-bytes must be positive");
    MIXGPT_REQUIRE(options.threads >= 0,
                   format("--threads %d: must be >= 0 (0: all cores)", options.threads));
}

void check_not_present(const std::string& path, bool force) {
    MIXGPT_REQUIRE(force || !file_exists(path), path + ": already exists (use --force to overwrite)");
}

Corpus open_corpus(const PrepareOptions& options) {
    if (options.builtin_corpus == "kjv") return Corpus::from_documents(kjv_chapters(), "the KJV corpus");
    return Corpus::from_files(resolve_inputs(options.corpus), options.corpus);
}

void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    file.close();
    MIXGPT_REQUIRE(file.good(), path + ": cannot write");
}

// A reused tokenizer, loaded as the kind asked for, if any.
std::optional<Tokenizer> load_reused_tokenizer(const PrepareOptions& options) {
    if (options.tokenizer_path.empty()) return std::nullopt;
    if (options.tokenizer_kind) return Tokenizer::load(options.tokenizer_path, *options.tokenizer_kind);
    return Tokenizer::load(options.tokenizer_path);
}

// Where the tokenizer's files go beside the dataset: a SentencePiece model as tokenizer.model,
// GPT-2's files under their own names.
std::vector<std::string> tokenizer_destinations(const std::optional<Tokenizer>& reused,
                                                const std::string& directory) {
    const std::filesystem::path folder(directory);
    if (!reused || reused->kind() == TokenizerKind::sentencepiece)
        return {(folder / kTokenizerFileName).string()};
    std::vector<std::string> destinations;
    for (const std::string& file : reused->files())
        destinations.push_back((folder / std::filesystem::path(file).filename()).string());
    return destinations;
}

void copy_file_to(const std::string& source, const std::string& destination) {
    std::error_code error;
    std::filesystem::copy_file(source, destination, std::filesystem::copy_options::overwrite_existing, error);
    if (error) throw Error(destination + ": cannot write (" + error.message() + ")");
}

// Writes the tokenizer's files to the outputs' temporary paths: copies of the reused
// tokenizer's files, or a model trained on a sample of the corpus.
Tokenizer make_tokenizer(const PrepareOptions& options, const std::optional<Tokenizer>& reused,
                         const Corpus& corpus, const std::vector<std::unique_ptr<AtomicOutput>>& outputs) {
    if (reused) {
        for (size_t i = 0; i < outputs.size(); ++i)
            copy_file_to(reused->files()[i], outputs[i]->temporary_path());
        return *reused;
    }
    const std::string& temporary_path = outputs.front()->temporary_path();
    const TrainingSample sample = corpus.sample(static_cast<size_t>(options.tokenizer_sample_bytes));
    MIXGPT_REQUIRE(sample.bytes() > 0, "empty corpus: " + corpus.description() + " holds no text");
    log_info(format("training a %s tokenizer (vocabulary %d) on %.1f MB of %s",
                    options.tokenizer.model_type == TokenizerModelType::bpe ? "BPE" : "unigram",
                    options.tokenizer.vocab_size, static_cast<double>(sample.bytes()) / 1e6,
                    corpus.description().c_str()));
    write_file(temporary_path, train_tokenizer(sample, options.tokenizer));
    return Tokenizer::load(temporary_path);
}

// Creates the output directory; removes it again, on failure, when this run
// created it (it is removed only while empty: outputs are committed last).
class OutputDirectory {
public:
    explicit OutputDirectory(const std::string& path) : path_(path), created_(!file_exists(path)) {
        make_directories(path);
    }
    ~OutputDirectory() {
        std::error_code ignored;
        if (created_ && std::uncaught_exceptions() > 0) std::filesystem::remove(path_, ignored);
    }
    OutputDirectory(const OutputDirectory&) = delete;
    OutputDirectory& operator=(const OutputDirectory&) = delete;

private:
    std::string path_;
    bool created_;
};

struct SegmentBatch {
    std::vector<TextSegment> segments;
    size_t text_bytes = 0;
    uint64_t input_bytes_read = 0;  // of the corpus, once the batch was read
};

SegmentBatch read_batch(Corpus& corpus, size_t max_bytes) {
    SegmentBatch batch;
    TextSegment segment;
    while (batch.text_bytes < max_bytes && corpus.next(segment)) {
        batch.text_bytes += segment.text.size();
        batch.segments.push_back(std::move(segment));
    }
    batch.input_bytes_read = corpus.bytes_read();
    return batch;
}

struct EncodeTotals {
    int64_t invalid_bytes = 0;
    int64_t text_bytes = 0;
};

// Streams the corpus through the encoder into the writer; the next batch is
// read while the current one is encoded.
EncodeTotals encode_corpus(Corpus& corpus, ParallelEncoder& encoder, DatasetWriter& writer,
                           const PrepareOptions& options) {
    const size_t batch_bytes =
        std::max(kMinBatchBytes, kBatchBytesPerThread * static_cast<size_t>(encoder.threads()));
    Progress progress("encode", static_cast<double>(corpus.total_bytes()) / 1e6, "MB");
    EncodeTotals totals;
    std::vector<std::vector<int32_t>> tokens;
    int64_t document_bytes = 0;
    SegmentBatch batch = read_batch(corpus, batch_bytes);
    while (!batch.segments.empty()) {
        auto upcoming = std::async(std::launch::async,
                                   [&corpus, batch_bytes] { return read_batch(corpus, batch_bytes); });
        totals.invalid_bytes += static_cast<int64_t>(encoder.encode(batch.segments, tokens));
        for (size_t i = 0; i < batch.segments.size(); ++i) {
            const TextSegment& segment = batch.segments[i];
            if (segment.first) {
                writer.begin_document(
                    split_of_document(options.seed, segment.document, options.val_fraction));
                document_bytes = 0;
            }
            writer.append_tokens(tokens[i].data(), tokens[i].size());
            document_bytes += static_cast<int64_t>(segment.text.size());
            if (segment.last) writer.end_document(document_bytes);
        }
        totals.text_bytes += static_cast<int64_t>(batch.text_bytes);
        const SplitInfo& train = writer.info(Split::train);
        const SplitInfo& val = writer.info(Split::val);
        progress.update(
            static_cast<double>(batch.input_bytes_read) / 1e6,
            format("%lld documents, %lld tokens", static_cast<long long>(train.documents + val.documents),
                   static_cast<long long>(train.tokens + val.tokens)));
        batch = upcoming.get();
    }
    progress.finish();
    return totals;
}

void check_splits(const DatasetWriter& writer, const PrepareOptions& options, const Corpus& corpus) {
    const SplitInfo& train = writer.info(Split::train);
    const SplitInfo& val = writer.info(Split::val);
    const int64_t documents = train.documents + val.documents;
    MIXGPT_REQUIRE(documents > 0, "empty corpus: " + corpus.description() + " holds no document");
    MIXGPT_REQUIRE(train.documents > 0,
                   format("the train split is empty: all %lld documents went to validation",
                          static_cast<long long>(documents)));
    MIXGPT_REQUIRE(
        options.val_fraction == 0 || val.documents > 0,
        format("the validation split is empty: none of the %lld documents was drawn with "
               "--val-fraction %g --seed %llu (use more documents, a larger fraction or another seed)",
               static_cast<long long>(documents), options.val_fraction,
               static_cast<unsigned long long>(options.seed)));
}

}  // namespace

PrepareResult run_prepare(const PrepareOptions& options) {
    check_options(options);
    const std::string directory =
        options.output_directory.empty() ? "data/" + options.builtin_corpus : options.output_directory;
    PrepareResult result;
    result.dataset_path = (std::filesystem::path(directory) / kDatasetFileName).string();
    check_not_present(result.dataset_path, options.force);
    auto start = Clock::now();
    const std::optional<Tokenizer> reused = load_reused_tokenizer(options);
    result.tokenizer_files = tokenizer_destinations(reused, directory);
    result.tokenizer_path = result.tokenizer_files.front();
    bool reuse_in_place = reused.has_value();
    for (size_t i = 0; reused && i < result.tokenizer_files.size(); ++i) {
        std::error_code not_found;
        reuse_in_place = reuse_in_place && std::filesystem::equivalent(reused->files()[i],
                                                                       result.tokenizer_files[i], not_found);
    }
    if (!reuse_in_place)
        for (const std::string& file : result.tokenizer_files) check_not_present(file, options.force);

    Corpus corpus = open_corpus(options);
    const OutputDirectory output_directory(directory);

    std::vector<std::unique_ptr<AtomicOutput>> tokenizer_outputs;
    if (!reuse_in_place)
        for (const std::string& file : result.tokenizer_files)
            tokenizer_outputs.push_back(std::make_unique<AtomicOutput>(file));
    const Tokenizer tokenizer =
        reuse_in_place ? *reused : make_tokenizer(options, reused, corpus, tokenizer_outputs);
    result.tokenizer_seconds = seconds_since(start);
    log_info(format("tokenizer ready in %.1f s: %s, %d tokens", result.tokenizer_seconds,
                    tokenizer_kind_name(tokenizer.kind()), tokenizer.vocab_size()));

    start = Clock::now();
    AtomicOutput dataset_output(result.dataset_path);
    EncodeTotals totals;
    {
        DatasetMetadata metadata;
        metadata.vocab_size = tokenizer.vocab_size();
        metadata.eot_id = tokenizer.eot_id();
        metadata.unk_id = tokenizer.unk_id();
        metadata.tokenizer_sha256 = tokenizer.sha256();
        metadata.tokenizer_kind = tokenizer_kind_name(tokenizer.kind());
        metadata.tokenizer_files.clear();
        for (const std::string& file : result.tokenizer_files)
            metadata.tokenizer_files.push_back(std::filesystem::path(file).filename().string());
        metadata.command = options.command;
        metadata.seed = options.seed;
        metadata.val_fraction = options.val_fraction;
        DatasetWriter writer(dataset_output.temporary_path(), metadata);
        ParallelEncoder encoder(tokenizer, options.threads);
        result.threads = encoder.threads();
        totals = encode_corpus(corpus, encoder, writer, options);
        check_splits(writer, options, corpus);
        result.skipped_lines = corpus.skipped_lines();
        result.invalid_utf8_bytes = totals.invalid_bytes;
        writer.finish(result.invalid_utf8_bytes, result.skipped_lines);
        result.train = writer.info(Split::train);
        result.val = writer.info(Split::val);
    }
    result.encode_seconds = seconds_since(start);
    result.input_megabytes = static_cast<double>(totals.text_bytes) / 1e6;
    for (const auto& output : tokenizer_outputs) output->commit();
    dataset_output.commit();

    if (result.skipped_lines > 0)
        log_warning(format("skipped %lld bad JSONL lines (--skip-bad-lines)",
                           static_cast<long long>(result.skipped_lines)));
    if (result.invalid_utf8_bytes > 0)
        log_warning(format("%lld bytes of invalid UTF-8 were kept as byte tokens",
                           static_cast<long long>(result.invalid_utf8_bytes)));
    return result;
}

}  // namespace mixgpt
