#include "eval/run_eval.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/h5.h"
#include "core/log.h"
#include "eval/checkpoint_tokenizer.h"
#include "eval/evaluate.h"
#include "tokenizer/corpus.h"
#include "tokenizer/dataset.h"
#include "tokenizer/dataset_path.h"
#include "tokenizer/loader.h"
#include "tokenizer/split_windows.h"

namespace mixgpt {
namespace {

struct TokenSource {
    std::vector<int32_t> tokens;
    double bytes_per_token = 0;
};

// The split's shards as token streams, the first `max_tokens` tokens only (0: all), read as needed.
std::vector<TokenStream> split_streams(SplitWindows& split, int64_t max_tokens) {
    std::vector<TokenStream> streams;
    int64_t left = max_tokens > 0 ? max_tokens : std::numeric_limits<int64_t>::max();
    for (size_t shard = 0; shard < split.shard_count() && left > 0; ++shard) {
        const int64_t tokens = std::min(left, split.shard_tokens(shard));
        streams.push_back({tokens, [&split, shard](int64_t offset, int64_t count, int32_t* out) {
                               split.read_tokens(shard, offset, count, out);
                           }});
        left -= tokens;
    }
    return streams;
}

// Each document's tokens followed by the end-of-text token, as the dataset stores them.
TokenSource tokenize_text(const std::vector<std::string>& inputs, const Tokenizer& tokenizer,
                          int64_t max_tokens) {
    CorpusOptions corpus_options;
    corpus_options.inputs = inputs;
    Corpus corpus = Corpus::from_files(resolve_inputs(corpus_options).files, corpus_options);
    TokenSource source;
    int64_t bytes = 0;
    TextSegment segment;
    while (corpus.next(segment) &&
           (max_tokens == 0 || static_cast<int64_t>(source.tokens.size()) < max_tokens)) {
        const std::vector<int32_t> pieces = tokenizer.encode(segment.text);
        source.tokens.insert(source.tokens.end(), pieces.begin(), pieces.end());
        if (segment.last) source.tokens.push_back(tokenizer.eot_id());
        bytes += static_cast<int64_t>(segment.text.size());
    }
    MIXGPT_REQUIRE(!source.tokens.empty(), "text: the inputs hold no text");
    source.bytes_per_token = static_cast<double>(bytes) / static_cast<double>(source.tokens.size());
    if (max_tokens > 0 && static_cast<int64_t>(source.tokens.size()) > max_tokens)
        source.tokens.resize(static_cast<size_t>(max_tokens));
    return source;
}

std::string join(const std::vector<std::string>& parts) {
    std::string text;
    for (const std::string& part : parts) text += (text.empty() ? "" : " ") + part;
    return text;
}

// The datasets the checkpoint was trained on, every component of a mixture (its "mixture" option:
// "PATH:WEIGHT,PATH:WEIGHT,..."), as training's validation read them.
std::vector<std::string> trained_datasets(const Checkpoint& checkpoint) {
    std::vector<std::string> paths;
    std::stringstream mixture(checkpoint_option(checkpoint, "mixture"));
    for (std::string component; std::getline(mixture, component, ',');)
        paths.push_back(resolve_dataset_path(component.substr(0, component.rfind(':'))));
    if (!paths.empty()) return paths;
    const std::string trained = checkpoint_option(checkpoint, "dataset");
    MIXGPT_REQUIRE(!trained.empty(), "dataset: not given and not recorded in the checkpoint");
    return {resolve_dataset_path(trained)};
}

// The datasets scored: the one given, else those the checkpoint was trained on, each checked to be
// that dataset by the identity the checkpoint records (checkpoints written before identities were
// recorded are taken at their word).
std::vector<std::string> datasets_to_score(const EvalOptions& options, const CheckpointModel& loaded) {
    if (!options.dataset.empty()) return {resolve_dataset_path(options.dataset)};
    const std::vector<std::string> paths = trained_datasets(loaded.checkpoint);
    std::stringstream recorded(checkpoint_option(loaded.checkpoint, "dataset_identity"));
    std::string identity;
    for (size_t k = 0; k < paths.size() && std::getline(recorded, identity, ','); ++k)
        MIXGPT_REQUIRE(
            dataset_identity(paths[k]) == identity,
            paths[k] + ": not the dataset " + loaded.path +
                " was trained on (another dataset is at that path now); give --dataset to score it");
    return paths;
}

}  // namespace

EvalReport run_evaluation(const EvalOptions& options) {
    MIXGPT_REQUIRE(
        options.batch_size >= 0 && options.seq_len >= 0 && options.stride >= 0 && options.max_tokens >= 0,
        "batch-size, seq-len, stride, max-tokens: must not be negative");
    CheckpointModel loaded = CheckpointModel::read(options.checkpoint, options.allow_nonfinite);
    const Checkpoint& trained = loaded.checkpoint;
    const std::string trained_batch = checkpoint_option(trained, "batch_size");
    MIXGPT_REQUIRE(options.batch_size > 0 || !trained_batch.empty(),
                   "batch-size: not recorded in the checkpoint, give --batch-size");
    const int batch_size = options.batch_size > 0 ? options.batch_size : std::stoi(trained_batch);
    const int seq_len = options.seq_len > 0 ? options.seq_len : trained.config.max_seq_len;
    MIXGPT_REQUIRE(seq_len <= trained.config.max_seq_len, "seq-len: " + std::to_string(seq_len) +
                                                              " exceeds the model's context of " +
                                                              std::to_string(trained.config.max_seq_len));
    const int stride = options.stride > 0 ? options.stride : seq_len;

    loaded.instantiate(options.device, batch_size, seq_len);
    EvalReport report;
    report.checkpoint = loaded.path;
    report.step = loaded.checkpoint.step;
    report.seq_len = seq_len;
    report.stride = stride;
    report.batch_size = batch_size;

    if (!options.text_inputs.empty()) {
        const Tokenizer tokenizer = load_checkpoint_tokenizer(loaded, options.tokenizer);
        const TokenSource source = tokenize_text(options.text_inputs, tokenizer, options.max_tokens);
        report.source = "text " + join(options.text_inputs);
        report.bytes_per_token = source.bytes_per_token;
        report.totals = evaluate_tokens(*loaded.model, source.tokens, stride);
    } else {
        const std::vector<std::string> datasets = datasets_to_score(options, loaded);
        std::vector<DatasetInfo> infos;
        SplitInfo split;
        for (const std::string& dataset : datasets) {
            infos.push_back(read_checked_dataset_info(dataset));
            const DatasetInfo& info = infos.back();
            MIXGPT_REQUIRE(info.tokenizer.sha256 == loaded.checkpoint.tokenizer_sha256,
                           dataset + ": tokenizer_sha256 is " + info.tokenizer.sha256 + ", the checkpoint " +
                               loaded.path + " was trained with " + loaded.checkpoint.tokenizer_sha256);
            split.tokens += info.split(options.split).tokens;
            split.bytes += info.split(options.split).bytes;
        }
        report.source =
            (datasets.size() > 1 ? "datasets " : "dataset ") + join(datasets) + " split " + options.split;
        report.bytes_per_token = static_cast<double>(split.bytes) / static_cast<double>(split.tokens);
        if (stride == seq_len && options.max_tokens == 0) {
            LoaderOptions loader_options;
            loader_options.dataset_path = datasets.front();
            if (datasets.size() > 1)
                for (const std::string& dataset : datasets) loader_options.mixture.push_back({dataset, 1});
            loader_options.split = options.split;
            loader_options.batch_size = batch_size;
            loader_options.seq_len = seq_len;
            loader_options.mode = LoaderMode::eval;
            loader_options.prefetch = false;
            loader_options.verify_data = options.verify_data;
            loader_options.vocab_limit = loaded.checkpoint.config.vocab_size;
            DataLoader loader(loader_options);
            Progress progress("eval", static_cast<double>(loader.batches_per_epoch()), "batch");
            report.totals = evaluate_loader(*loaded.model, loader, 0, &progress);
        } else {
            SplitWindows windows(infos, options.split, seq_len, loaded.checkpoint.config.vocab_size);
            const std::vector<TokenStream> streams = split_streams(windows, options.max_tokens);
            Progress progress("eval", static_cast<double>(stride_window_count(streams, seq_len, stride)),
                              "window");
            report.totals = evaluate_streams(*loaded.model, streams, stride, &progress);
        }
    }
    report.mean_loss = report.totals.mean_loss();
    report.perplexity = report.totals.perplexity();
    report.bits_per_byte = report.totals.bits_per_byte(report.bytes_per_token);
    return report;
}

std::string eval_report_json(const EvalReport& report) {
    const nlohmann::ordered_json json = {{"checkpoint", report.checkpoint},
                                         {"step", report.step},
                                         {"source", report.source},
                                         {"seq_len", report.seq_len},
                                         {"stride", report.stride},
                                         {"batch_size", report.batch_size},
                                         {"tokens", report.totals.tokens},
                                         {"total_nats", report.totals.nats},
                                         {"mean_loss", report.mean_loss},
                                         {"perplexity", report.perplexity},
                                         {"bytes_per_token", report.bytes_per_token},
                                         {"bits_per_byte", report.bits_per_byte}};
    return json.dump(2);
}

std::string eval_report_text(const EvalReport& report) {
    return format(
        "checkpoint     %s (step %lld)\nsource         %s\nwindows        T=%d, stride %d\n"
        "tokens scored  %lld\nmean loss      %.6f nats/token\nperplexity     %.4f\n"
        "bits per byte  %.6f (%.3f bytes/token)\n",
        report.checkpoint.c_str(), static_cast<long long>(report.step), report.source.c_str(), report.seq_len,
        report.stride, static_cast<long long>(report.totals.tokens), report.mean_loss, report.perplexity,
        report.bits_per_byte, report.bytes_per_token);
}

}  // namespace mixgpt
