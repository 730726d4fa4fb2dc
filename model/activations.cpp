#include "model/activations.h"

#include "core/error.h"
#include "core/log.h"

namespace mixgpt {
namespace {

constexpr size_t kAlignment = 64;

}  // namespace

ActivationLayout::ActivationLayout(const GPTConfig& config, int batch_size, int seq_len, Precision precision,
                                   Recompute recompute) {
    config.validate();
    MIXGPT_REQUIRE(batch_size > 0, format("batch_size: %d, expected a positive number", batch_size));
    MIXGPT_REQUIRE(seq_len > 0 && seq_len <= config.max_seq_len,
                   format("seq_len: %d is outside [1, max_seq_len %d]", seq_len, config.max_seq_len));
    const DType act = activation_dtype(precision);
    const int64_t N = int64_t{batch_size} * seq_len, C = config.n_embd;
    const int L = config.n_layer;
    const int kept = recompute == Recompute::full ? 1 : L;                    // per layer unless full
    const int kept_unless_recomputed = recompute == Recompute::none ? L : 1;  // GELU and LayerNorm outputs
    add("residual", act, L + 1, N * C);
    add("ln1", act, kept_unless_recomputed, N * C);
    add("ln1_mean", DType::f32, kept, N);
    add("ln1_rstd", DType::f32, kept, N);
    add("qkv", act, kept, N * 3 * C);
    add("attention", act, kept, N * C);
    add("lse", DType::f32, kept, N * config.n_head);
    add("residual2", act, kept, N * C);
    add("ln2", act, kept_unless_recomputed, N * C);
    add("ln2_mean", DType::f32, kept, N);
    add("ln2_rstd", DType::f32, kept, N);
    add("fc", act, kept, N * 4 * C);
    add("fc_gelu", act, kept_unless_recomputed, N * 4 * C);
    add("lnf", act, 1, N * C);
    add("lnf_mean", DType::f32, 1, N);
    add("lnf_rstd", DType::f32, 1, N);
    add("logits", act, 1, N * config.padded_vocab_size());
    add("losses", DType::f32, 1, N);
    add("branch", act, 1, N * C);
    add("grad_residual", act, 1, N * C);
    add("grad_narrow", act, 1, N * C);
    add("grad_wide", act, 1, N * 4 * C);
}

void ActivationLayout::add(const std::string& name, DType dtype, int copies, int64_t elements) {
    ActivationBuffer buffer;
    buffer.name = name;
    buffer.dtype = dtype;
    buffer.copies = copies;
    buffer.elements = elements;
    buffer.offset = total_bytes_;
    buffer.copy_bytes =
        (static_cast<size_t>(elements) * dtype_size(dtype) + kAlignment - 1) / kAlignment * kAlignment;
    total_bytes_ += buffer.bytes();
    buffers_.push_back(std::move(buffer));
}

const ActivationBuffer& ActivationLayout::find(const std::string& name) const {
    for (const ActivationBuffer& buffer : buffers_)
        if (buffer.name == name) return buffer;
    throw Error("no activation buffer named '" + name + "'");
}

}  // namespace mixgpt
