#include "tokenizer/prepare.h"

#include <omp.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/atomic_file.h"
#include "core/directory_lock.h"
#include "core/error.h"
#include "core/log.h"
#include "core/paths.h"
#include "core/progress.h"
#include "core/sha256.h"
#include "tokenizer/document_split.h"
#include "tokenizer/kjv_corpus.h"
#include "tokenizer/parallel_encoder.h"
#include "tokenizer/prepare_folder.h"
#include "tokenizer/shard_writer.h"
#include "tokenizer/utf8.h"

namespace mixgpt {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
constexpr size_t kBatchBytesPerThread = size_t{4} << 20;
constexpr size_t kMinBatchBytes = size_t{16} << 20;
constexpr size_t kCensusBytes = size_t{64} << 20;  // text read at most to see both splits before training

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
    MIXGPT_REQUIRE(options.shard_tokens > 0, "--shard-tokens must be positive");
    MIXGPT_REQUIRE(!(options.append && options.force), "give either --append or --force, not both");
}

void stop_if_requested(const PrepareOptions& options) {
    if (options.stop_requested && options.stop_requested()) throw Error("stopped by a signal");
}

// The inputs by content: path, size and the SHA-256 of the file ("" for standard input).
std::vector<InputRecord> identify_inputs(const std::vector<InputFile>& files) {
    std::vector<InputRecord> records;
    for (const InputFile& file : files)
        records.push_back({file.path, file.bytes, file.path == "-" ? "" : sha256_file_hex(file.path)});
    return records;
}

// An append of an input the dataset holds already, under any name, would hold its documents twice
// (and its validation documents in the training split too).
void require_new_inputs(const DatasetIndex& dataset, const std::vector<InputRecord>& inputs,
                        const std::string& directory) {
    for (const InputRecord& input : inputs)
        for (const InputRecord& held : dataset.inputs)
            MIXGPT_REQUIRE(input.sha256.empty() || input.sha256 != held.sha256,
                           input.path + ": already in " + directory + " (the same content as " + held.path +
                               ", read by an earlier prepare or append)");
}

// What the inputs are and how they are read: a resumed run must match it exactly.
std::string settings_json(const PrepareOptions& options, const std::vector<InputRecord>& records) {
    nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
    for (const InputRecord& input : records)
        inputs.push_back({{"path", input.path}, {"bytes", input.bytes}, {"sha256", input.sha256}});
    const CorpusOptions& corpus = options.corpus;
    const nlohmann::ordered_json json = {{"inputs", inputs},
                                         {"corpus", options.builtin_corpus},
                                         {"format", static_cast<int>(corpus.format)},
                                         {"doc_separator", corpus.doc_separator},
                                         {"jsonl_key", corpus.jsonl_key},
                                         {"skip_bad_lines", corpus.skip_bad_lines},
                                         {"seed", options.seed},
                                         {"val_fraction", options.val_fraction},
                                         {"shard_tokens", options.shard_tokens},
                                         {"append", options.append}};
    return json.dump();
}

struct OpenedCorpus {
    Corpus corpus;
    ResolvedInputs inputs;
    std::vector<std::string> described;  // what was taken (and left), for the log
};

OpenedCorpus open_corpus(const PrepareOptions& options) {
    if (options.builtin_corpus == "kjv") {
        std::vector<std::string> chapters = kjv_chapters();
        const size_t count = chapters.size();
        Corpus corpus = Corpus::from_documents(std::move(chapters), "the KJV corpus");
        const std::string line = format("inputs: %s, %zu documents, %.1f MB", corpus.description().c_str(), count,
                                        static_cast<double>(corpus.total_bytes()) / 1e6);
        return {std::move(corpus), {}, {line}};
    }
    ResolvedInputs inputs = resolve_inputs(options.corpus);
    Corpus corpus = Corpus::from_files(inputs.files, options.corpus);
    std::vector<std::string> described = inputs.describe();
    return {std::move(corpus), std::move(inputs), std::move(described)};
}

// Reads documents (up to kCensusBytes of text) until both splits have one: a corpus too small
// for its split fraction is refused before the tokenizer is trained.
void check_splits_early(const PrepareOptions& options, int64_t first_document) {
    OpenedCorpus opened = open_corpus(options);
    opened.corpus.set_stream_use(StreamUse::replayable);
    bool seen[2] = {false, options.val_fraction == 0};
    int64_t documents = 0;
    size_t bytes = 0;
    TextSegment segment;
    while (!(seen[0] && seen[1])) {
        if (bytes > kCensusBytes) return;  // undecided: checked at the end
        if (!opened.corpus.next(segment)) break;
        bytes += segment.text.size();
        if (!segment.last) continue;
        ++documents;
        seen[static_cast<int>(
            split_of_document(options.seed, first_document + segment.document, options.val_fraction))] = true;
    }
    if (seen[0] && seen[1]) return;
    const std::string& name = opened.corpus.description();
    MIXGPT_REQUIRE(documents > 0, "empty corpus: " + name + " holds no document");
    MIXGPT_REQUIRE(seen[0], format("the train split would be empty: all %lld documents go to validation",
                                   static_cast<long long>(documents)));
    throw Error(
        format("the validation split would be empty: none of the %lld documents of %s is drawn with "
               "--val-fraction %g (one in every 1/f documents is; use more documents or a larger fraction)",
               static_cast<long long>(documents), name.c_str(), options.val_fraction));
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

// The names of the tokenizer's files in the dataset folder: a SentencePiece model (trained or
// reused) as tokenizer.model, GPT-2's files under their own names.
std::vector<std::string> tokenizer_file_names(const std::optional<Tokenizer>& reused) {
    if (!reused || reused->kind() == TokenizerKind::sentencepiece) return {kTokenizerFileName};
    std::vector<std::string> names;
    for (const std::string& file : reused->files()) names.push_back(fs::path(file).filename().string());
    return names;
}

void copy_file_to(const std::string& source, const std::string& destination) {
    std::error_code error;
    fs::copy_file(source, destination, fs::copy_options::overwrite_existing, error);
    if (error) throw Error(destination + ": cannot write (" + error.message() + ")");
}

// Writes the tokenizer's files into `folder` under `names`, committed at once (a resumed run
// reuses them): copies of the reused tokenizer's files, or a SentencePiece model trained on a
// sample of the corpus. Returns the names it wrote: a reused file that is already there (the
// same file) is left alone, so that undoing the run never removes an input.
std::vector<std::string> write_tokenizer_files(const PrepareOptions& options,
                                               const std::optional<Tokenizer>& reused, const Corpus& corpus,
                                               const std::string& folder,
                                               const std::vector<std::string>& names) {
    std::vector<std::string> written;
    std::vector<std::unique_ptr<AtomicOutput>> outputs;
    for (size_t i = 0; i < names.size(); ++i) {
        const std::string path = (fs::path(folder) / names[i]).string();
        std::error_code not_found;
        if (reused && fs::equivalent(reused->files()[i], path, not_found)) continue;
        outputs.push_back(std::make_unique<AtomicOutput>(path));
        written.push_back(names[i]);
        if (reused) copy_file_to(reused->files()[i], outputs.back()->temporary_path());
    }
    if (!reused) {
        const TrainingSample sample = corpus.sample(static_cast<size_t>(options.tokenizer_sample_bytes));
        MIXGPT_REQUIRE(sample.bytes() > 0, "empty corpus: " + corpus.description() + " holds no text");
        log_info(format("training a %s tokenizer (vocabulary %d) on %.1f MB of %s",
                        options.tokenizer.model_type == TokenizerModelType::bpe ? "BPE" : "unigram",
                        options.tokenizer.vocab_size, static_cast<double>(sample.bytes()) / 1e6,
                        corpus.description().c_str()));
        write_file(outputs.front()->temporary_path(), train_tokenizer(sample, options.tokenizer));
        Tokenizer::load(outputs.front()->temporary_path(), TokenizerKind::sentencepiece);
    }
    for (const auto& output : outputs) output->commit();
    return written;
}

// The identity recorded in the index and in every shard.
TokenizerIdentity identity_of(const Tokenizer& tokenizer, const std::vector<std::string>& names) {
    TokenizerIdentity identity;
    identity.kind = tokenizer_kind_name(tokenizer.kind());
    identity.files = names;
    identity.sha256 = tokenizer.sha256();
    return identity;
}

// The tokenizer whose files lie in `folder` under the names of `identity`, loaded as its kind.
Tokenizer load_tokenizer_files(const std::string& folder, const TokenizerIdentity& identity) {
    TokenizerKind kind = TokenizerKind::sentencepiece;
    try {
        kind = parse_tokenizer_kind(identity.kind);
    } catch (const Error& error) {
        throw Error(folder + ": " + error.what());
    }
    return Tokenizer::load((fs::path(folder) / identity.files.front()).string(), kind);
}

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

// Streams the corpus through the encoder into the shards; the next batch is read while the
// current one is encoded.
EncodeTotals encode_corpus(Corpus& corpus, ParallelEncoder& encoder, ShardWriter& writer, uint64_t seed,
                           double val_fraction, const PrepareOptions& options) {
    const size_t batch_bytes =
        std::max(kMinBatchBytes, kBatchBytesPerThread * static_cast<size_t>(encoder.threads()));
    Progress progress("encode", corpus.sizes_known() ? static_cast<double>(corpus.total_bytes()) / 1e6 : 0,
                      "MB");
    EncodeTotals totals;
    std::vector<std::vector<int32_t>> tokens;
    std::vector<int64_t> invalid;
    int64_t document_bytes = 0, document_invalid = 0, documents = 0, token_count = 0;
    SegmentBatch batch = read_batch(corpus, batch_bytes);
    while (!batch.segments.empty()) {
        auto upcoming = std::async(std::launch::async,
                                   [&corpus, batch_bytes] { return read_batch(corpus, batch_bytes); });
        try {
            stop_if_requested(options);
            encoder.encode(batch.segments, tokens);
            invalid.assign(batch.segments.size(), 0);
            const auto count = static_cast<int64_t>(batch.segments.size());
#pragma omp parallel for schedule(dynamic, 16) num_threads(encoder.threads())
            for (int64_t i = 0; i < count; ++i) {
                const std::string& text = batch.segments[static_cast<size_t>(i)].text;
                invalid[static_cast<size_t>(i)] =
                    static_cast<int64_t>(utf8::invalid_byte_count(text.data(), text.size()));
            }
            for (size_t i = 0; i < batch.segments.size(); ++i) {
                const TextSegment& segment = batch.segments[i];
                if (segment.first) {
                    stop_if_requested(options);
                    writer.begin_document(split_of_document(seed, segment.document, val_fraction));
                    document_bytes = document_invalid = 0;
                }
                writer.append_tokens(tokens[i].data(), tokens[i].size());
                token_count += static_cast<int64_t>(tokens[i].size());
                document_bytes += static_cast<int64_t>(segment.text.size());
                document_invalid += invalid[i];
                if (segment.last) {
                    ++token_count;  // the end-of-text token
                    ++documents;
                    writer.end_document(document_bytes, document_invalid, segment.end);
                    totals.invalid_bytes += document_invalid;
                }
            }
        } catch (...) {
            upcoming.wait();
            throw;
        }
        totals.text_bytes += static_cast<int64_t>(batch.text_bytes);
        progress.update(
            static_cast<double>(batch.input_bytes_read) / 1e6,
            format("%lld documents, %lld tokens, %lld shards", static_cast<long long>(documents),
                   static_cast<long long>(token_count), static_cast<long long>(writer.shards_committed())));
        batch = upcoming.get();
    }
    progress.finish();
    return totals;
}

void add(SplitInfo& total, const SplitInfo& part) {
    total.tokens += part.tokens;
    total.bytes += part.bytes;
    total.documents += part.documents;
}

void check_splits(const DatasetIndex& index) {
    SplitInfo train, val;
    for (const ShardRecord& shard : index.shards) {
        add(train, shard.train);
        add(val, shard.val);
    }
    const int64_t documents = train.documents + val.documents;
    MIXGPT_REQUIRE(documents > 0, "empty corpus: it holds no document");
    MIXGPT_REQUIRE(train.documents > 0,
                   format("the train split is empty: all %lld documents went to validation",
                          static_cast<long long>(documents)));
    MIXGPT_REQUIRE(index.val_fraction == 0 || val.documents > 0,
                   format("the validation split is empty: none of the %lld documents was drawn with "
                          "--val-fraction %g (use more documents or a larger fraction)",
                          static_cast<long long>(documents), index.val_fraction));
}

PrepareResult result_of(const PrepareFolder& folder, const DatasetIndex& index) {
    PrepareResult result;
    result.dataset_path = folder.directory;
    result.tokenizer_path = (fs::path(folder.directory) / index.tokenizer.files.front()).string();
    for (const ShardRecord& shard : index.shards) {
        add(result.train, shard.train);
        add(result.val, shard.val);
        result.invalid_utf8_bytes += shard.invalid_utf8_bytes;
        result.skipped_lines += shard.skipped_lines;
    }
    result.shards = static_cast<int64_t>(index.shards.size());
    return result;
}

// The run itself, once the folder is known; on failure the caller undoes or keeps what it wrote.
class PrepareRun {
public:
    PrepareRun(const PrepareOptions& options, PrepareFolder& folder) : options_(options), folder_(folder) {}

    PrepareResult run() {
        OpenedCorpus opened = open_corpus(options_);
        for (const std::string& line : opened.described) log_info(line);
        const std::vector<InputRecord> inputs = identify_inputs(opened.inputs.files);
        const std::string settings = settings_json(options_, inputs);
        CorpusPosition start;
        auto clock = Clock::now();
        std::optional<Tokenizer> tokenizer;
        if (folder_.start == PrepareStart::resume) {
            require_same_settings(folder_.journal->settings, settings, folder_.journal_path());
            index_ = folder_.journal->index;
            dataset_info_of_index(folder_.work, index_);  // every complete shard is there, whole
            start = folder_.journal->position;
            tokenizer = load_checked_tokenizer();
            log_info(format("resuming after %zu complete shards, at document %lld", index_.shards.size(),
                            static_cast<long long>(start.next_document)));
        } else if (folder_.start == PrepareStart::append) {
            index_ = *folder_.base;
            index_.shard_tokens = options_.shard_tokens;
            start.next_document = index_.documents();
            tokenizer = load_checked_tokenizer();
            require_new_inputs(index_, inputs, folder_.directory);
        } else {
            const std::optional<Tokenizer> reused = load_reused_tokenizer(options_);  // before the corpus
            check_splits_early(options_, 0);
            stop_if_requested(options_);
            const std::vector<std::string> names = tokenizer_file_names(reused);
            tokenizer_files_written_ =
                write_tokenizer_files(options_, reused, opened.corpus, folder_.work, names);
            tokenizer = Tokenizer::load((fs::path(folder_.work) / names.front()).string(),
                                        reused ? reused->kind() : TokenizerKind::sentencepiece);
            index_.tokenizer = identity_of(*tokenizer, names);
            index_.vocab_size = tokenizer->vocab_size();
            index_.eot_id = tokenizer->eot_id();
            index_.unk_id = tokenizer->unk_id();
            index_.seed = options_.seed;
            index_.val_fraction = options_.val_fraction;
            index_.shard_tokens = options_.shard_tokens;
        }
        const double tokenizer_seconds = seconds_since(clock);
        log_info(format("tokenizer ready in %.1f s: %s, %d tokens", tokenizer_seconds,
                        tokenizer_kind_name(tokenizer->kind()), tokenizer->vocab_size()));
        stop_if_requested(options_);
        journal_ = {settings, start, index_};
        write_journal(folder_.journal_path(), journal_);

        clock = Clock::now();
        opened.corpus.seek(start);
        DatasetMetadata metadata;
        metadata.vocab_size = index_.vocab_size;
        metadata.eot_id = index_.eot_id;
        metadata.unk_id = index_.unk_id;
        metadata.tokenizer = index_.tokenizer;
        metadata.command = "mixgpt prepare (a shard of a dataset folder: see index.json)";
        metadata.seed = index_.seed;
        metadata.val_fraction = index_.val_fraction;
        ShardWriter writer(folder_.work, metadata, index_.shard_tokens,
                           static_cast<int64_t>(index_.shards.size()), start.next_document,
                           start.skipped_lines, [this](const ShardCommit& commit) {
                               journal_.index.shards.push_back(commit.record);
                               journal_.position = commit.after;
                               write_journal(folder_.journal_path(), journal_);
                               ++shards_written_;
                           });
        ParallelEncoder encoder(*tokenizer, options_.threads);
        const EncodeTotals totals =
            encode_corpus(opened.corpus, encoder, writer, index_.seed, index_.val_fraction, options_);
        writer.finish();
        index_ = journal_.index;
        index_.inputs.insert(index_.inputs.end(), inputs.begin(), inputs.end());
        check_splits(index_);
        index_.commands.push_back(options_.command);
        write_index(folder_.index_path(), index_);
        std::error_code ignored;
        fs::remove(folder_.journal_path(), ignored);
        finish_prepare_folder(folder_);

        PrepareResult result = result_of(folder_, index_);
        result.shards_written = shards_written_;
        result.resumed_at_document = folder_.start == PrepareStart::resume ? start.next_document : -1;
        result.input_lines = opened.described;
        result.threads = encoder.threads();
        result.tokenizer_seconds = tokenizer_seconds;
        result.encode_seconds = seconds_since(clock);
        result.input_megabytes = static_cast<double>(totals.text_bytes) / 1e6;
        return result;
    }

    int64_t shards_written() const { return shards_written_; }
    const std::vector<std::string>& tokenizer_files_written() const { return tokenizer_files_written_; }
    size_t shards_complete() const { return journal_.index.shards.size(); }

private:
    // The folder's tokenizer (of any kind), which must be the one its index names, and the one
    // given with --tokenizer, if any.
    Tokenizer load_checked_tokenizer() const {
        const TokenizerIdentity& identity = index_.tokenizer;
        const Tokenizer tokenizer = load_tokenizer_files(folder_.work, identity);
        MIXGPT_REQUIRE(tokenizer.sha256() == identity.sha256,
                       tokenizer.path() + ": its SHA-256 is not the one the dataset was made with (" +
                           identity.describe() + ")");
        const std::optional<Tokenizer> given = load_reused_tokenizer(options_);
        if (given)
            MIXGPT_REQUIRE(
                tokenizer_kind_name(given->kind()) == identity.kind && given->sha256() == identity.sha256,
                options_.tokenizer_path + ": not the tokenizer of " + folder_.directory + " (" +
                    identity.describe() + ")");
        return tokenizer;
    }

    const PrepareOptions& options_;
    PrepareFolder& folder_;
    DatasetIndex index_;
    PrepareJournal journal_;
    int64_t shards_written_ = 0;
    std::vector<std::string> tokenizer_files_written_;  // names in the folder
};

std::string without_trailing_slashes(std::string path) {
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    return path;
}

// The files and folders the run reads: the inputs as given, and the files they expand to.
std::vector<std::string> input_paths(const PrepareOptions& options) {
    if (!options.builtin_corpus.empty()) return {};
    std::vector<std::string> paths;
    for (const std::string& input : options.corpus.inputs)
        if (input != "-" && fs::exists(input)) paths.push_back(input);
    for (const InputFile& file : resolve_inputs(options.corpus).files)
        if (file.path != "-") paths.push_back(file.path);
    return paths;
}

// An input inside the dataset folder would be replaced with it (--force), or read back as a document.
void require_inputs_outside(const std::string& directory, const std::vector<std::string>& inputs) {
    for (const std::string& input : inputs)
        MIXGPT_REQUIRE(!path_lies_within(input, directory),
                       directory + ": holds the input " + input +
                           "; prepare writes its dataset folder apart from what it reads (--force would "
                           "replace the input with it): choose another --output, or move the inputs out");
}

// The run itself, once the folder is locked.
PrepareResult prepare_in_locked_folder(const PrepareOptions& options, const std::string& directory,
                                       const std::vector<std::string>& inputs) {
    PrepareFolder folder = open_prepare_folder(options, directory, inputs);
    for (const std::string& path : folder.removed)
        log_info("removed " + path + " (left by a process that is gone)");
    if (folder.start == PrepareStart::complete) {
        log_info(directory +
                 ": the dataset is complete, nothing to resume (without --resume, --append adds to it)");
        return result_of(folder, read_index(folder.index_path()));
    }
    PrepareRun run(options, folder);
    try {
        return run.run();
    } catch (const Error& error) {
        const bool keep = folder.start != PrepareStart::replace && run.shards_complete() > 0 &&
                          (run.shards_written() > 0 || folder.start == PrepareStart::resume);
        if (!keep) {
            undo_prepare_folder(folder, run.tokenizer_files_written());
            throw;
        }
        throw Error(std::string(error.what()) +
                    format("; %zu complete shards are kept in %s: `mixgpt prepare "
                           "--resume` with the same inputs continues",
                           run.shards_complete(), folder.work.c_str()));
    }
}

}  // namespace

// The folder is locked before anything is written in it or beside it, so that a second prepare
// (or an export, import or train) into the same folder is refused at once.
PrepareResult run_prepare(const PrepareOptions& options) {
    check_options(options);
    const std::string directory = without_trailing_slashes(
        options.output_directory.empty() ? "data/" + options.builtin_corpus : options.output_directory);
    MIXGPT_REQUIRE(fs::is_directory(directory) || !fs::exists(directory),
                   directory + ": exists and is not a folder");
    const std::vector<std::string> inputs = input_paths(options);
    require_inputs_outside(directory, inputs);
    const bool existed = fs::exists(directory);
    try {
        const DirectoryLock lock(directory);
        return prepare_in_locked_folder(options, directory, inputs);
    } catch (const Error&) {
        std::error_code ignored;
        if (!existed) fs::remove(directory, ignored);  // only while empty: nothing was kept
        throw;
    }
}

}  // namespace mixgpt
