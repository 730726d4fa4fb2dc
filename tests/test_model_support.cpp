#include "tests/test_model_support.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "tests/reference_f64.h"

namespace mixgpt::test {

GPTConfig tiny_config() {
    GPTConfig config;
    config.n_layer = 2;
    config.n_head = 2;
    config.n_embd = 32;
    config.vocab_size = 200;
    config.max_seq_len = 16;
    return config;
}

GPTConfig tiny_llama_config() {
    GPTConfig config = tiny_config();
    config.arch = Arch::llama;
    config.n_kv_head = 1;
    config.ffn_hidden = 48;
    config.tie_embeddings = false;
    config.rope_theta = 1000.f;
    return config;
}

std::string config_label(const GPTConfig& config) {
    std::string label = arch_name(config.arch);
    if (config.mlp) label += std::string(" ") + mlp_name(*config.mlp);
    if (!config.norm_weights) label += " no_norm_weights";
    if (config.embedding_norm) label += " embedding_norm";
    if (config.qk_norm) label += " qk_norm";
    if (config.zero_init_projections || config.zero_init_head) label += " zero_init";
    if (config.logit_softcap > 0) label += " softcap";
    if (config.document_separator >= 0) label += " documents";
    if (config.document_positions) label += " document_positions";
    return label;
}

std::vector<float> spread_parameters(const ParameterLayout& layout, uint32_t seed) {
    std::mt19937 generator(seed);
    std::normal_distribution<float> normal(0.f, 1.f);
    std::vector<float> values(static_cast<size_t>(layout.total()));
    for (const ParameterView& view : layout.views()) {
        const bool is_norm = view.role == Role::embedding_norm_weight || view.role == Role::embedding_norm_bias ||
                             view.role == Role::attention_norm_weight || view.role == Role::attention_norm_bias ||
                             view.role == Role::mlp_norm_weight || view.role == Role::mlp_norm_bias ||
                             view.role == Role::final_norm_weight || view.role == Role::final_norm_bias;
        const bool is_weight = view.init == Init::ones;
        const int64_t count = view.real_rows * (view.numel / view.shape[0]);
        for (int64_t i = 0; i < count; ++i) {
            float value = normal(generator);
            if (view.decay)
                value *= 0.1f;
            else if (is_norm)
                value = (is_weight ? 1.f : 0.f) + 0.1f * value;
            else
                value *= 0.05f;
            values[static_cast<size_t>(view.offset + i)] = value;
        }
    }
    return values;
}

PassResult training_pass(GPT& model, const std::vector<int32_t>& tokens, const std::vector<int32_t>& targets,
                         int64_t b, int64_t t, const StepStatus* status) {
    Backend& backend = model.backend();
    const size_t count = static_cast<size_t>(b * t);
    Buffer batch = backend.allocate(2 * count * sizeof(int32_t));
    auto* token_memory = batch.as<int32_t>();
    backend.copy_to_backend(token_memory, tokens.data(), count * sizeof(int32_t));
    backend.copy_to_backend(token_memory + count, targets.data(), count * sizeof(int32_t));
    model.zero_gradients();
    const TensorView losses = model.forward_backward(TensorView(token_memory, DType::i32, {b, t}),
                                                     TensorView(token_memory + count, DType::i32, {b, t}),
                                                     1.f / static_cast<float>(count), status);
    PassResult result{std::vector<float>(count),
                      std::vector<float>(static_cast<size_t>(model.layout().total()))};
    backend.copy_to_host(result.losses.data(), losses.data, count * sizeof(float));
    backend.copy_to_host(result.gradients.data(), model.gradients().data,
                         result.gradients.size() * sizeof(float));
    return result;
}

std::vector<std::pair<std::string, double>> gradient_errors_per_tensor(const ParameterLayout& layout,
                                                                       const std::vector<float>& gradients,
                                                                       const std::vector<double>& reference) {
    std::vector<std::pair<std::string, double>> errors;
    for (const ParameterView& view : layout.views()) {
        const int64_t count = view.numel / view.shape[0] * view.real_rows;
        const std::vector<double> got(gradients.begin() + view.offset, gradients.begin() + view.offset + count);
        const std::vector<double> want(reference.begin() + view.offset, reference.begin() + view.offset + count);
        errors.emplace_back(view.name, relative_norm_error(got, want));
        for (int64_t i = count; i < view.numel; ++i)
            EXPECT_EQ(gradients[static_cast<size_t>(view.offset + i)], 0.f) << view.name << " padding";
    }
    return errors;
}

ReferenceErrors errors_against(const PassResult& result, const F64Gpt::Pass& reference,
                               const ParameterLayout& layout) {
    ReferenceErrors errors;
    double loss = 0, reference_loss = 0;
    for (size_t i = 0; i < result.losses.size(); ++i) {
        loss += result.losses[i];
        reference_loss += reference.losses[i];
    }
    errors.mean_loss = std::abs(loss - reference_loss) / reference_loss;
    errors.losses = relative_norm_error(std::vector<double>(result.losses.begin(), result.losses.end()),
                                        reference.losses);
    errors.gradients = relative_norm_error(
        std::vector<double>(result.gradients.begin(), result.gradients.end()), reference.gradients);
    for (const auto& [name, error] :
         gradient_errors_per_tensor(layout, result.gradients, reference.gradients))
        if (error >= errors.worst_tensor) {
            errors.worst_tensor = error;
            errors.worst_name = name;
        }
    return errors;
}

}  // namespace mixgpt::test
