#include "interop/export.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/build_info.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "core/output_file.h"
#include "eval/checkpoint_tokenizer.h"
#include "model/checkpoint_model.h"
#include "model/run_layout.h"
#include "interop/hf_layout.h"
#include "interop/hf_config.h"
#include "interop/hf_tokenizer.h"
#include "interop/model_card.h"
#include "interop/safetensors_file.h"
#include "interop/staging_directory.h"
#include "kernels/precision.h"

namespace mixgpt::interop {
namespace {

namespace fs = std::filesystem;

struct ExportDtype {
    DType dtype;
    const char* safetensors_name;
};

ExportDtype parse_export_dtype(const std::string& name) {
    if (name == "fp32") return {DType::f32, "F32"};
    if (name == "bf16") return {DType::bf16, "BF16"};
    if (name == "fp16") return {DType::f16, "F16"};
    throw Error("dtype: '" + name + "' is not one of fp32, bf16, fp16");
}

std::vector<unsigned char> encode(const std::vector<float>& values, DType dtype) {
    std::vector<unsigned char> bytes(values.size() * dtype_size(dtype));
    if (dtype == DType::f32) {
        std::memcpy(bytes.data(), values.data(), bytes.size());
    } else {
        convert_from_float(values.data(), bytes.data(), dtype, values.size());
    }
    return bytes;
}

// The model options (issue 38) that neither GPT2LMHeadModel nor LlamaForCausalLM (nor Qwen3ForCausalLM,
// which --qk-norm exports as) computes, each refused in one line naming it.
void refuse_options_without_a_class(const GPTConfig& config, const std::string& path) {
    // Gemma 2's final_logit_softcapping is this cap, but Gemma2ForCausalLM is neither family
    // (sandwich norms, (1 + w) RMSNorm, GeGLU, scaled embeddings, attention soft-cap), and neither
    // GPT2LMHeadModel nor LlamaForCausalLM has a field for it: no exported class computes these logits.
    MIXGPT_REQUIRE(config.logit_softcap == 0,
                   format("%s: --logit-softcap %g: no Hugging Face class mixgpt exports caps its logits "
                          "(Gemma 2's final_logit_softcapping belongs to Gemma2ForCausalLM, whose blocks are "
                          "neither family's): export refuses",
                          path.c_str(), static_cast<double>(config.logit_softcap)));
    // LlamaMLP is always gated (gate, up, down); GPT2MLP takes any activation_function, relu2
    // included, but mixgpt's GPT-2 export writes gelu_new alone (interop/README.md).
    MIXGPT_REQUIRE(config.mlp_kind() == config.family().mlp,
                   format("%s: --mlp %s: the Hugging Face class mixgpt exports for --arch %s has a %s MLP: "
                          "export refuses",
                          path.c_str(), mlp_name(config.mlp_kind()), config.family().name,
                          mlp_name(config.family().mlp)));
    MIXGPT_REQUIRE(!config.embedding_norm,
                   format("%s: --embedding-norm: neither GPT2LMHeadModel nor LlamaForCausalLM normalises the "
                          "embeddings: export refuses",
                          path.c_str()));
    // Under llama, QK-norm is Qwen3ForCausalLM's (interop/llama_layout.h); GPT-2 has no such class.
    MIXGPT_REQUIRE(!config.qk_norm || config.arch == Arch::llama,
                   format("%s: --qk-norm: GPT2LMHeadModel does not normalise queries and keys (Qwen3ForCausalLM, "
                          "which does, has Llama's blocks): export refuses",
                          path.c_str()));
    // A window on every layer of the llama family is MistralForCausalLM's sliding_window; GPT-2 has
    // none, nor a class a per-layer pattern (mixgpt's Qwen3 export writes no window).
    if (config.attention_window > 0) {
        MIXGPT_REQUIRE(config.arch == Arch::llama && !config.qk_norm,
                       format("%s: --window %d: %s has no sliding window (MistralForCausalLM, which has, has "
                              "Llama's blocks without QK-norm): export refuses",
                              path.c_str(), config.attention_window, hf_architecture(config)));
        const std::string pattern = config.window_pattern_text();
        MIXGPT_REQUIRE(pattern.find('L') == std::string::npos,
                       format("%s: --window-pattern %s: MistralForCausalLM windows every layer alike, and no "
                              "exported class mixes windowed and whole-context layers: export refuses",
                              path.c_str(), pattern.c_str()));
    }
    // Both classes' norms have weights (and GPT-2's biases); writing ones and zeros would compute
    // the same function, but export writes the checkpoint's tensors alone (interop/README.md).
    MIXGPT_REQUIRE(config.norm_weights,
                   format("%s: --norm-weights false: the checkpoint has no norm weights, and export writes "
                          "only the tensors it has: export refuses",
                          path.c_str()));
}

}  // namespace

ExportResult export_hf(const ExportOptions& options) {
    MIXGPT_REQUIRE(!options.output.empty(), "output: no folder given (-o DIR)");
    const StopSignalGuard signals;
    const ExportDtype dtype = parse_export_dtype(options.dtype);
    const CheckpointModel loaded = CheckpointModel::read(options.source, options.allow_nonfinite);
    const Checkpoint& checkpoint = loaded.checkpoint;
    refuse_options_without_a_class(checkpoint.config, loaded.path);
    const Tokenizer tokenizer = load_checkpoint_tokenizer(loaded, options.tokenizer);
    stop_if_signalled(signals, options.output);
    MIXGPT_REQUIRE(
        tokenizer.vocab_size() == checkpoint.config.vocab_size,
        format("%s: the model's vocab_size is %d, its tokenizer %s has %d tokens", loaded.path.c_str(),
               checkpoint.config.vocab_size, tokenizer.path().c_str(), tokenizer.vocab_size()));

    const std::string run_directory = run_directory_of(options.source, loaded.path);
    StagingDirectory staging(options.output, options.force,
                             {options.source, loaded.path, tokenizer.path(), run_directory}, "-o", "export");
    const fs::path folder(staging.path());
    const ParameterLayout layout(checkpoint.config);
    std::vector<TensorToWrite> tensors;
    for (const HfTensor& tensor : hf_tensors(checkpoint.config, layout))
        tensors.push_back({tensor.hf_name, dtype.safetensors_name, tensor.hf_shape,
                           encode(to_hf(tensor, checkpoint.parameters.data()), dtype.dtype)});
    stop_if_signalled(signals, options.output);
    const std::map<std::string, std::string> metadata = {
        {"format", "pt"},  // transformers refuses safetensors files without it
        {"mixgpt_version", build_version()},
        {"mixgpt_commit", build_commit()},
        {kMetadataStep, std::to_string(checkpoint.step)},
        {kMetadataTokensSeen, std::to_string(checkpoint.tokens_seen)},
        {kMetadataPrecision, precision_name(checkpoint.precision)},
        {kMetadataDataset, checkpoint_option(checkpoint, "dataset")},
        {kMetadataBatchSize, checkpoint_option(checkpoint, "batch_size")},
        {"mixgpt_tokenizer_sha256", checkpoint.tokenizer_sha256}};
    const fs::path weights = folder / "model.safetensors";
    write_safetensors(weights.string(), tensors, metadata);
    stop_if_signalled(signals, options.output);

    HfModelConfig config;
    config.model = checkpoint.config;
    config.eos_token_id = tokenizer.eot_id();
    write_whole_file((folder / "config.json").string(), hf_config_json(config));
    write_whole_file((folder / "generation_config.json").string(), hf_generation_config_json(config));
    write_hf_tokenizer(tokenizer, checkpoint.config.max_seq_len, folder.string());
    ModelCardFacts facts;
    facts.checkpoint_path = loaded.path;
    facts.checkpoint = &checkpoint;
    facts.run_directory = run_directory;
    facts.dtype = options.dtype;
    facts.commit = build_commit();
    facts.tokenizer = hf_tokenizer_description(tokenizer);
    write_whole_file((folder / "README.md").string(), model_card(facts));

    ExportResult result;
    result.document_separator = checkpoint.config.document_separator;
    result.document_positions = checkpoint.config.document_positions;
    result.checkpoint = loaded.path;
    result.step = checkpoint.step;
    result.tensors = static_cast<int>(tensors.size());
    result.safetensors_bytes = fs::file_size(weights);
    stop_if_signalled(signals, options.output);
    staging.commit();
    return result;
}

}  // namespace mixgpt::interop
