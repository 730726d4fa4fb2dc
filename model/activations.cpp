#include "model/activations.h"

#include <algorithm>

#include "core/error.h"
#include "core/log.h"

namespace mixgpt {
namespace {

constexpr size_t kAlignment = 64;

}  // namespace

const char* activation_name(Activation activation) {
    static const char* const kNames[kActivationCount] = {
        "residual",        "attention_norm", "attention_norm_mean", "attention_norm_rstd", "qkv",
        "attention",       "lse",            "qk_norm_rstd",        "attention_residual",  "mlp_norm",
        "mlp_norm_mean",
        "mlp_norm_rstd",   "mlp_input",      "mlp_hidden",          "final_norm",          "final_norm_mean",
        "final_norm_rstd", "logits",         "losses",              "z_losses",            "branch",
        "grad_residual",   "grad_narrow",    "grad_wide",           "grad_hidden",         "embedding",
        "embedding_norm_mean", "embedding_norm_rstd"};
    return kNames[static_cast<size_t>(activation)];
}

ActivationLayout::ActivationLayout(const GPTConfig& config, int batch_size, int seq_len, Precision precision,
                                   Recompute recompute) {
    config.validate();
    MIXGPT_REQUIRE(batch_size > 0, format("batch_size: %d, expected a positive number", batch_size));
    MIXGPT_REQUIRE(seq_len > 0 && seq_len <= config.max_seq_len,
                   format("seq_len: %d is outside [1, max_seq_len %d]", seq_len, config.max_seq_len));
    const Family& family = config.family();
    const DType act = activation_dtype(precision);
    const int64_t N = int64_t{batch_size} * seq_len, C = config.n_embd;
    const int64_t Q = config.size_of(Dim::qkv), M = config.size_of(Dim::mlp_input),
                  D = config.size_of(Dim::mlp_hidden);
    const int L = config.n_layer;
    const int kept = recompute == Recompute::full ? 1 : L;                    // per layer unless full
    const int kept_unless_recomputed = recompute == Recompute::none ? L : 1;  // norm and MLP activation outputs
    const bool has_mean = family.norm == NormKind::layernorm;
    add(Activation::residual, act, L + 1, N * C);
    add(Activation::attention_norm, act, kept_unless_recomputed, N * C);
    add(Activation::attention_norm_mean, DType::f32, has_mean ? kept : 0, N);
    add(Activation::attention_norm_rstd, DType::f32, kept, N);
    add(Activation::qkv, act, kept, N * Q);
    add(Activation::attention, act, kept, N * C);
    add(Activation::lse, DType::f32, kept, N * config.n_head);
    add(Activation::qk_norm_rstd, DType::f32, config.qk_norm ? kept : 0, N * (config.n_head + config.kv_heads()));
    add(Activation::attention_residual, act, kept, N * C);
    add(Activation::mlp_norm, act, kept_unless_recomputed, N * C);
    add(Activation::mlp_norm_mean, DType::f32, has_mean ? kept : 0, N);
    add(Activation::mlp_norm_rstd, DType::f32, kept, N);
    add(Activation::mlp_input, act, kept, N * M);
    add(Activation::mlp_hidden, act, kept_unless_recomputed, N * D);
    add(Activation::final_norm, act, 1, N * C);
    add(Activation::final_norm_mean, DType::f32, has_mean ? 1 : 0, N);
    add(Activation::final_norm_rstd, DType::f32, 1, N);
    add(Activation::logits, act, 1, N * config.padded_vocab_size());
    add(Activation::losses, DType::f32, 1, N);
    add(Activation::z_losses, DType::f32, 1, N);
    add(Activation::branch, act, 1, N * C);
    add(Activation::grad_residual, act, 1, N * C);
    add(Activation::grad_narrow, act, 1, N * C);
    add(Activation::grad_wide, act, 1, N * std::max(Q, M));
    add(Activation::grad_hidden, act, config.mlp_kind() == MlpKind::swiglu ? 1 : 0, N * D);
    const int embedding_norm = config.embedding_norm ? 1 : 0;
    add(Activation::embedding, act, embedding_norm, N * C);
    add(Activation::embedding_norm_mean, DType::f32, has_mean ? embedding_norm : 0, N);
    add(Activation::embedding_norm_rstd, DType::f32, embedding_norm, N);
}

void ActivationLayout::add(Activation activation, DType dtype, int copies, int64_t elements) {
    ActivationBuffer& buffer = buffers_[static_cast<size_t>(activation)];
    buffer.dtype = dtype;
    buffer.copies = copies;
    buffer.elements = copies > 0 ? elements : 0;
    buffer.offset = total_bytes_;
    buffer.copy_bytes =
        (static_cast<size_t>(buffer.elements) * dtype_size(dtype) + kAlignment - 1) / kAlignment * kAlignment;
    total_bytes_ += buffer.bytes();
}

}  // namespace mixgpt
