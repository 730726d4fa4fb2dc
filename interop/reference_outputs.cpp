#include "interop/reference_outputs.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/error.h"
#include "core/h5.h"
#include "core/log.h"
#include "eval/checkpoint_tokenizer.h"
#include "model/checkpoint_model.h"
#include "tokenizer/dataset_path.h"
#include "eval/generate.h"
#include "model/token_batch.h"
#include "interop/staging_directory.h"
#include "tokenizer/dataset.h"

namespace mixgpt::interop {
namespace {

namespace fs = std::filesystem;

template <typename T>
void write_binary(const fs::path& path, const std::vector<T>& values) {
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(reinterpret_cast<const char*>(values.data()),
               static_cast<std::streamsize>(values.size() * sizeof(T)));
    file.flush();
    MIXGPT_REQUIRE(file.good(), path.string() + ": cannot write");
}

// Logits (W, T, V) of the first W windows of T tokens, real vocabulary columns.
std::vector<float> window_logits(CheckpointModel& loaded, const std::vector<int32_t>& tokens, int windows) {
    GPT& model = *loaded.model;
    const int t = model.seq_len();
    const int64_t vocab = loaded.checkpoint.config.vocab_size;
    const int64_t padded = loaded.checkpoint.config.padded_vocab_size();
    TokenBatch batch(model.backend(), 1, t);
    std::vector<float> all(static_cast<size_t>(windows) * t * vocab);
    std::vector<float> row(static_cast<size_t>(t) * padded);
    for (int w = 0; w < windows; ++w) {
        batch.upload(tokens.data() + static_cast<size_t>(w) * t);
        model.forward(batch.inputs(), batch.targets());
        const TensorView logits = model.logits();  // (1, T, Vp) f32
        model.backend().copy_to_host(row.data(), logits.data, logits.bytes());
        for (int position = 0; position < t; ++position)
            std::copy_n(row.begin() + static_cast<ptrdiff_t>(position) * padded, vocab,
                        all.begin() + (static_cast<ptrdiff_t>(w) * t + position) * vocab);
    }
    return all;
}

}  // namespace

void write_reference_outputs(const ReferenceOptions& options) {
    MIXGPT_REQUIRE(options.logits_tokens > 0 && options.new_tokens > 0,
                   "reference-tokens, new-tokens: must be positive");
    const StopSignalGuard signals;
    CheckpointModel loaded = CheckpointModel::read(options.source);
    DeviceOptions device;
    device.threads = options.threads;
    device.precision = "fp32";
    loaded.instantiate(device, 1, 0);
    const Tokenizer tokenizer = load_checkpoint_tokenizer(loaded, "");
    const int t = loaded.checkpoint.config.max_seq_len;

    const std::string given =
        options.dataset.empty() ? checkpoint_option(loaded.checkpoint, "dataset") : options.dataset;
    MIXGPT_REQUIRE(!given.empty(), "dataset: not given and not recorded in the checkpoint");
    const DatasetInfo info = read_dataset_info(resolve_dataset_path(given));
    MIXGPT_REQUIRE(info.tokenizer.sha256 == loaded.checkpoint.tokenizer_sha256,
                   info.path + ": made with another tokenizer than the checkpoint's");
    const ShardInfo& shard =
        info.shards.front();  // a single-file dataset's whole split; a folder's first shard
    const h5::File file = h5::File::open_read(shard.path);
    const SplitInfo& split = shard.split(options.split);
    std::vector<int32_t> tokens(static_cast<size_t>(split.tokens));
    file.read("/" + options.split + "/tokens", h5::Type::i32, tokens.data(), split.tokens);
    std::vector<int64_t> offsets(static_cast<size_t>(split.documents + 1));
    file.read("/" + options.split + "/doc_offsets", h5::Type::i64, offsets.data(), split.documents + 1);
    const int windows = (options.logits_tokens + t - 1) / t;
    MIXGPT_REQUIRE(
        static_cast<int64_t>(windows) * t + 1 <= split.tokens,
        format("reference-tokens: %d windows of %d tokens do not fit in the %lld tokens of split %s", windows,
               t, static_cast<long long>(split.tokens), options.split.c_str()));

    const std::vector<float> logits = window_logits(loaded, tokens, windows);
    const std::vector<int32_t> prompt = tokenizer.encode(options.prompt);
    MIXGPT_REQUIRE(!prompt.empty(), "prompt: empty");
    GenerationOptions generation;
    generation.max_new_tokens = options.new_tokens;
    generation.sampling.temperature = 0.f;
    generation.stop_token = tokenizer.eot_id();
    const std::vector<int32_t> greedy = generate(*loaded.model, prompt, 1, generation)[0];

    stop_if_signalled(signals, options.output);
    StagingDirectory staging(options.output, options.force,
                             {loaded.path, tokenizer.path(), info.path, options.export_output},
                             "--reference-out", "export");
    const fs::path folder(staging.path());
    const nlohmann::ordered_json reference = {{"checkpoint", loaded.path},
                                              {"seq_len", t},
                                              {"vocab_size", loaded.checkpoint.config.vocab_size},
                                              {"eot_id", tokenizer.eot_id()},
                                              {"split", options.split},
                                              {"logits_windows", windows},
                                              {"prompt", options.prompt},
                                              {"prompt_ids", prompt},
                                              {"greedy_ids", greedy},
                                              {"precision", "fp32"},
                                              {"device", "cpu"}};
    std::ofstream(folder / "reference.json") << reference.dump(2) << "\n";
    write_binary(folder / "val_tokens.i32", tokens);
    write_binary(folder / "val_doc_offsets.i64", offsets);
    write_binary(folder / "logits.f32", logits);
    stop_if_signalled(signals, options.output);
    staging.commit();
}

}  // namespace mixgpt::interop
