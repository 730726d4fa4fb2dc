#include "model/checkpoint_model.h"

#include <filesystem>
#include <optional>

#include "core/error.h"
#include "core/log.h"
#include "model/finite_check.h"
#include "model/newest_checkpoint.h"

namespace mixgpt {

std::string checkpoint_option(const Checkpoint& checkpoint, const std::string& name) {
    for (const auto& [key, value] : checkpoint.options)
        if (key == name) return value;
    return "";
}

CheckpointModel CheckpointModel::read(const std::string& file_or_directory, bool allow_nonfinite) {
    namespace fs = std::filesystem;
    CheckpointModel loaded;
    if (fs::is_directory(file_or_directory)) {
        std::optional<FoundCheckpoint> found;
        for (const fs::path& directory :
             {fs::path(file_or_directory) / "checkpoints", fs::path(file_or_directory)})
            if (!found) found = read_newest_checkpoint(directory.string(), CheckpointContent::weights);
        MIXGPT_REQUIRE(found.has_value(),
                       file_or_directory + ": no valid checkpoint in this directory or its checkpoints/");
        loaded.path = std::move(found->path);
        loaded.checkpoint = std::move(found->checkpoint);
    } else {
        loaded.path = file_or_directory;
        loaded.checkpoint = read_checkpoint(loaded.path, CheckpointContent::weights);
    }
    if (!allow_nonfinite) require_finite_checkpoint(loaded.checkpoint, loaded.path);
    return loaded;
}

namespace {

// An fp8 model evaluated from a checkpoint: the training run's layer choices (when it was an fp8
// run), with current scaling, since evaluation makes no optimizer steps to update delayed scales.
Fp8Options inference_fp8_options(const Checkpoint& checkpoint) {
    Fp8Options options;
    options.scaling.scaling = Fp8Scaling::current;
    if (checkpoint.precision != Precision::fp8) return options;
    const std::string format = checkpoint_option(checkpoint, "fp8_format");
    if (!format.empty()) options.format = format;
    options.bf16_layers = checkpoint_option(checkpoint, "fp8_bf16_layers");
    options.head = checkpoint_option(checkpoint, "fp8_head") == "true";
    return options;
}

}  // namespace

void CheckpointModel::instantiate(const DeviceOptions& device, int batch_size, int seq_len) {
    BackendOptions backend_options;
    backend_options.device = device.device;
    backend_options.device_index = device.device_index;
    backend_options.threads = device.threads;
    backend_options.precision =
        device.precision.empty() ? checkpoint.precision : parse_precision(device.precision);
    model.reset();
    backend = make_backend(backend_options);
    model = std::make_unique<GPT>(*backend, checkpoint.config, batch_size,
                                  seq_len > 0 ? seq_len : checkpoint.config.max_seq_len, Recompute::none,
                                  ParameterSharding{}, inference_fp8_options(checkpoint));
    model->load_master_parameters(checkpoint.parameters.data(),
                                  static_cast<int64_t>(checkpoint.parameters.size()));
    const TensorView working = model->working_parameters();
    if (working.dtype != DType::f32 && activation_dtype(checkpoint.precision) == working.dtype &&
        !checkpoint.working_bits.empty())
        backend->copy_to_backend(working.data, checkpoint.working_bits.data(), working.bytes());
}

}  // namespace mixgpt
