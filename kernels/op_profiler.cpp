#include "kernels/op_profiler.h"

#include <algorithm>

#include "core/log.h"

namespace mixgpt {

std::string matmul_label(const char* op, const TensorView& weight) {
    return format("%s %lldx%lld", op, static_cast<long long>(weight.dim(0)),
                  static_cast<long long>(weight.dim(1)));
}

template <typename Call>
void OpProfiler::timed(const std::string& op, Call&& call) {
    const bool asynchronous = inner_->cuda_stream() != nullptr;
    if (asynchronous) inner_->synchronize();
    const auto start = std::chrono::steady_clock::now();
    call();
    if (asynchronous) inner_->synchronize();
    OpTime& time = times_[op];
    time.op = op;
    time.calls += 1;
    time.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<OpTime> OpProfiler::times() const {
    std::vector<OpTime> sorted;
    for (const auto& entry : times_) sorted.push_back(entry.second);
    std::sort(sorted.begin(), sorted.end(),
              [](const OpTime& a, const OpTime& b) { return a.seconds > b.seconds; });
    return sorted;
}

void OpProfiler::copy_to_backend(void* destination, const void* host_source, size_t bytes) {
    timed("copy_to_backend", [&] { inner_->copy_to_backend(destination, host_source, bytes); });
}
void OpProfiler::copy_to_host(void* host_destination, const void* source, size_t bytes) {
    timed("copy_to_host", [&] { inner_->copy_to_host(host_destination, source, bytes); });
}
void OpProfiler::copy_within(void* destination, const void* source, size_t bytes) {
    timed("copy_within", [&] { inner_->copy_within(destination, source, bytes); });
}
void OpProfiler::fill_zero(void* destination, size_t bytes) {
    timed("fill_zero", [&] { inner_->fill_zero(destination, bytes); });
}
void OpProfiler::embedding_forward(TensorView out, TensorView tokens, TensorView wte, TensorView wpe) {
    timed("embedding_forward", [&] { inner_->embedding_forward(out, tokens, wte, wpe); });
}
void OpProfiler::embedding_backward(TensorView dwte, TensorView dwpe, TensorView dout, TensorView tokens) {
    timed("embedding_backward", [&] { inner_->embedding_backward(dwte, dwpe, dout, tokens); });
}
void OpProfiler::layernorm_forward(TensorView out, TensorView mean, TensorView rstd, TensorView inp,
                                   TensorView weight, TensorView bias) {
    timed("layernorm_forward", [&] { inner_->layernorm_forward(out, mean, rstd, inp, weight, bias); });
}
void OpProfiler::residual_layernorm_forward(TensorView residual_out, TensorView out, TensorView mean,
                                            TensorView rstd, TensorView residual_in, TensorView branch,
                                            TensorView weight, TensorView bias) {
    timed("residual_layernorm_forward", [&] {
        inner_->residual_layernorm_forward(residual_out, out, mean, rstd, residual_in, branch, weight, bias);
    });
}
void OpProfiler::layernorm_backward(TensorView dinp, TensorView dweight, TensorView dbias, TensorView dout,
                                    TensorView inp, TensorView weight, TensorView mean, TensorView rstd) {
    timed("layernorm_backward",
          [&] { inner_->layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd); });
}
void OpProfiler::matmul_forward(TensorView out, TensorView pre_gelu, TensorView inp, TensorView weight,
                                TensorView bias) {
    timed(matmul_label("matmul_forward", weight),
          [&] { inner_->matmul_forward(out, pre_gelu, inp, weight, bias); });
}
void OpProfiler::matmul_backward_input(TensorView dinp, TensorView dout, TensorView weight, bool accumulate) {
    timed(matmul_label("matmul_backward_input", weight),
          [&] { inner_->matmul_backward_input(dinp, dout, weight, accumulate); });
}
void OpProfiler::matmul_backward_weight(TensorView dweight, TensorView dbias, TensorView dout,
                                        TensorView inp) {
    timed(matmul_label("matmul_backward_weight", dweight),
          [&] { inner_->matmul_backward_weight(dweight, dbias, dout, inp); });
}
void OpProfiler::gelu_forward(TensorView out, TensorView inp) {
    timed("gelu_forward", [&] { inner_->gelu_forward(out, inp); });
}
void OpProfiler::gelu_backward(TensorView dinp, TensorView dout, TensorView pre_gelu) {
    timed("gelu_backward", [&] { inner_->gelu_backward(dinp, dout, pre_gelu); });
}
void OpProfiler::attention_forward(TensorView out, TensorView lse, TensorView qkv, int n_head) {
    timed("attention_forward", [&] { inner_->attention_forward(out, lse, qkv, n_head); });
}
void OpProfiler::attention_backward(TensorView dqkv, TensorView dout, TensorView qkv, TensorView out,
                                    TensorView lse, int n_head) {
    timed("attention_backward", [&] { inner_->attention_backward(dqkv, dout, qkv, out, lse, n_head); });
}
void OpProfiler::attention_forward_cached(TensorView out, TensorView qkv, TensorView k_cache,
                                          TensorView v_cache, int position, int n_head) {
    timed("attention_forward_cached",
          [&] { inner_->attention_forward_cached(out, qkv, k_cache, v_cache, position, n_head); });
}
void OpProfiler::classifier(TensorView losses, TensorView logits, TensorView targets, int vocab_size,
                            bool compute_gradient, float gradient_scale, const StepStatus* status) {
    timed("classifier", [&] {
        inner_->classifier(losses, logits, targets, vocab_size, compute_gradient, gradient_scale, status);
    });
}
void OpProfiler::grad_norm_squared(StepStatus* status, TensorView grads) {
    timed("grad_norm_squared", [&] { inner_->grad_norm_squared(status, grads); });
}
void OpProfiler::decide_skip(StepStatus* status) {
    timed("decide_skip", [&] { inner_->decide_skip(status); });
}
void OpProfiler::adamw_step(TensorView params, TensorView grads, TensorView m, TensorView v,
                            TensorView working, int64_t decay_count, const AdamWHyper& hyper,
                            StepStatus* status) {
    timed("adamw_step",
          [&] { inner_->adamw_step(params, grads, m, v, working, decay_count, hyper, status); });
}
void OpProfiler::update_loss_scale(StepStatus* status, const LossScaleConfig& config) {
    timed("update_loss_scale", [&] { inner_->update_loss_scale(status, config); });
}
void OpProfiler::cast(TensorView out, TensorView in) {
    timed("cast", [&] { inner_->cast(out, in); });
}
void OpProfiler::scale(TensorView x, float factor) {
    timed("scale", [&] { inner_->scale(x, factor); });
}

}  // namespace mixgpt
