#include "interop/import.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "interop/export.h"
#include "interop/hf_config.h"
#include "interop/hf_layout.h"
#include "interop/hf_tensor_check.h"
#include "interop/hf_tokenizer.h"
#include "interop/safetensors_file.h"
#include "interop/staging_directory.h"
#include "model/checkpoint.h"
#include "model/finite_check.h"
#include "model/parameters.h"
#include "tokenizer/loader.h"

namespace mixgpt::interop {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
    std::ifstream file(path, std::ios::binary);
    MIXGPT_REQUIRE(file.good(), path.string() + ": missing or unreadable");
    return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

// The tensor's values as fp32, after checking its dtype (its shape is checked: require_hf_tensors).
std::vector<float> float_values(const SafetensorsFile& file, const SafetensorsTensor& tensor) {
    const size_t count = (tensor.end - tensor.begin) / safetensors_dtype_size(tensor.dtype);
    std::vector<float> values(count);
    if (tensor.dtype == "F32") {
        std::memcpy(values.data(), file.bytes_of(tensor), count * sizeof(float));
    } else if (tensor.dtype == "BF16" || tensor.dtype == "F16") {
        convert_to_float(file.bytes_of(tensor), tensor.dtype == "BF16" ? DType::bf16 : DType::f16,
                         values.data(), count);
    } else {
        throw Error(file.path + ": tensor '" + tensor.name + "' has dtype " + tensor.dtype +
                    ", expected F32, BF16 or F16");
    }
    return values;
}

int64_t metadata_int(const SafetensorsFile& file, const char* key) {
    const auto found = file.header.metadata.find(key);
    if (found == file.header.metadata.end()) return 0;
    try {
        size_t used = 0;
        const long long value = std::stoll(found->second, &used);
        if (used == found->second.size() && value >= 0) return value;
    } catch (const std::exception&) {
    }
    throw Error(file.path + ": __metadata__ " + key + ": '" + found->second +
                "' is not a non-negative integer");
}

std::string metadata_text(const SafetensorsFile& file, const char* key) {
    const auto found = file.header.metadata.find(key);
    return found == file.header.metadata.end() ? "" : found->second;
}

Precision metadata_precision(const SafetensorsFile& file) {
    const std::string precision = metadata_text(file, kMetadataPrecision);
    if (precision.empty()) return Precision::fp32;
    try {
        return parse_precision(precision);
    } catch (const Error& error) {
        throw Error(file.path + ": __metadata__ " + kMetadataPrecision + ": " + error.what());
    }
}

// Fills `parameters` from the file, whose tensors are those config.json implies
// (require_hf_tensors); an lm_head must be identical to the token embedding it is tied to; every
// value must be finite, unless allow_nonfinite.
void read_parameters(const SafetensorsFile& file, const GPTConfig& config, bool allow_nonfinite,
                     std::vector<float>& parameters) {
    const ParameterLayout layout(config);
    const std::vector<HfTensor> expected = hf_tensors(config, layout);
    require_hf_tensors(file.header, file.path, config, expected);
    parameters.assign(static_cast<size_t>(layout.total()), 0.f);
    std::set<std::string> used;
    std::vector<float> embedding;
    for (const HfTensor& tensor : expected) {
        const SafetensorsTensor* found = find_hf_tensor(file.header, tensor.hf_name);
        const std::vector<float> values = float_values(file, *found);
        const int64_t nonfinite = count_nonfinite(values.data(), static_cast<int64_t>(values.size()));
        MIXGPT_REQUIRE(
            allow_nonfinite || nonfinite == 0,
            format("%s: tensor '%s' has %lld non-finite value%s (NaN or Inf); refusing the model (%s "
                   "imports it anyway)",
                   file.path.c_str(), found->name.c_str(), static_cast<long long>(nonfinite),
                   nonfinite == 1 ? "" : "s", kAllowNonfiniteOption));
        used.insert(found->name);
        if (tensor.view == nullptr) {  // Qwen3's q_norm and k_norm: mixgpt's QK-norm has no weights
            MIXGPT_REQUIRE(std::all_of(values.begin(), values.end(), [&](float v) { return v == tensor.constant; }),
                           format("%s: %s is not all %g: mixgpt's QK-norm has no weights, refusing the model",
                                  file.path.c_str(), found->name.c_str(), static_cast<double>(tensor.constant)));
            continue;
        }
        from_hf(tensor, values.data(), parameters.data());
        if (tensor.view->role == Role::token_embedding) embedding = values;
    }
    for (const SafetensorsTensor& tensor : file.header.tensors) {
        if (used.count(tensor.name) || is_hf_buffer(tensor.name)) continue;
        // lm_head.weight, of the embedding's shape (require_hf_tensors)
        const std::vector<float> head = float_values(file, tensor);
        MIXGPT_REQUIRE(std::memcmp(head.data(), embedding.data(), head.size() * sizeof(float)) == 0,
                       file.path + ": lm_head.weight differs from the token embedding, and config.json ties them");
    }
}

}  // namespace

ImportResult import_hf(const ImportOptions& options) {
    MIXGPT_REQUIRE(!options.output.empty(), "output: no run directory given (-o RUN)");
    const StopSignalGuard signals;
    const fs::path folder(options.directory);
    MIXGPT_REQUIRE(fs::is_directory(folder), options.directory + ": not a folder");
    const std::string config_path = (folder / "config.json").string();
    const HfModelConfig config = parse_hf_config(read_text(config_path), config_path);
    const Tokenizer tokenizer = load_hf_tokenizer(options.directory);
    MIXGPT_REQUIRE(tokenizer.vocab_size() == config.model.vocab_size,
                   format("%s: vocab_size: %d, but %s has %d tokens", config_path.c_str(),
                          config.model.vocab_size, tokenizer.path().c_str(), tokenizer.vocab_size()));
    if (config.eos_token_id >= 0 && config.eos_token_id != tokenizer.eot_id())
        log_warning(format("%s: eos_token_id is %d, mixgpt separates documents with %s's <|endoftext|> (%d)",
                           config_path.c_str(), config.eos_token_id, tokenizer.path().c_str(),
                           tokenizer.eot_id()));
    const fs::path weights = folder / "model.safetensors";
    MIXGPT_REQUIRE(
        fs::exists(weights) || !fs::exists(folder / "model.safetensors.index.json"),
        options.directory + ": sharded safetensors (model.safetensors.index.json) are not supported");
    MIXGPT_REQUIRE(fs::exists(weights), options.directory + ": no model.safetensors");
    const SafetensorsFile file = read_safetensors(weights.string());
    stop_if_signalled(signals, options.output);

    Checkpoint checkpoint;
    checkpoint.config = config.model;
    read_parameters(file, config.model, options.allow_nonfinite, checkpoint.parameters);
    checkpoint.precision = metadata_precision(file);
    checkpoint.step = metadata_int(file, kMetadataStep);
    checkpoint.tokens_seen = metadata_int(file, kMetadataTokensSeen);
    checkpoint.tokenizer_sha256 = tokenizer.sha256();
    checkpoint.adam_m.assign(checkpoint.parameters.size(), 0.f);
    checkpoint.adam_v.assign(checkpoint.parameters.size(), 0.f);
    checkpoint.loader_state = LoaderState().to_vector();  // global_batch 0: no data position
    checkpoint.options = {{"imported_from", options.directory}};
    checkpoint.run_id = new_run_id();  // a lineage of its own: train --resume continues it
    for (const auto& [key, option] :
         {std::pair{kMetadataDataset, "dataset"}, {kMetadataBatchSize, "batch_size"}})
        if (!metadata_text(file, key).empty())
            checkpoint.options.emplace_back(option, metadata_text(file, key));

    stop_if_signalled(signals, options.output);
    StagingDirectory staging(options.output, options.force, {options.directory, tokenizer.path()}, "-o",
                             "import");
    checkpoint.tokenizer_path =
        (fs::path(options.output) / copy_tokenizer_files(tokenizer, staging.path())).string();
    const std::string staged =
        checkpoint_path((fs::path(staging.path()) / "checkpoints").string(), checkpoint.step);
    write_checkpoint(staged, checkpoint);
    stop_if_signalled(signals, options.output);
    staging.commit();

    ImportResult result;
    result.checkpoint = checkpoint_path((fs::path(options.output) / "checkpoints").string(), checkpoint.step);
    result.config = config.model;
    result.step = checkpoint.step;
    return result;
}

}  // namespace mixgpt::interop
