// Where a step's time goes, per op: a Backend that forwards every call to another backend and
// adds up the wall time of each op (`mixgpt bench --profile`). Matrix products are told apart by
// the weight's shape (N x K), so the output projection shows beside the block's products.
//
// On the CPU an op is complete when it returns; on CUDA the profiler synchronizes before and after
// every op, which removes the overlap of the host with the device: per-op times are right, the
// step time of a profiled run is longer than an unprofiled one.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/ops.h"

namespace mixgpt {

struct OpTime {
    std::string op;  // "matmul_forward 8192x384", "layernorm_backward", ...
    int64_t calls = 0;
    double seconds = 0;
};

class OpProfiler final : public Backend {
public:
    explicit OpProfiler(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}

    // Times since construction or the last reset(), largest first.
    std::vector<OpTime> times() const;
    void reset() { times_.clear(); }

    std::string name() const override { return inner_->name(); }
    Precision precision() const override { return inner_->precision(); }
    Buffer allocate(size_t bytes) override { return inner_->allocate(bytes); }
    Buffer allocate_host_staging(size_t bytes) override { return inner_->allocate_host_staging(bytes); }
    void copy_to_backend(void* destination, const void* host_source, size_t bytes) override;
    void copy_to_host(void* host_destination, const void* source, size_t bytes) override;
    void copy_within(void* destination, const void* source, size_t bytes) override;
    void fill_zero(void* destination, size_t bytes) override;
    void synchronize() override { inner_->synchronize(); }
    void* cuda_stream() const override { return inner_->cuda_stream(); }
    size_t peak_memory_bytes() const override { return inner_->peak_memory_bytes(); }
    AvailableMemory available_memory() const override { return inner_->available_memory(); }
    size_t attention_scratch_bytes(int64_t seq_len) const override {
        return inner_->attention_scratch_bytes(seq_len);
    }

    void embedding_forward(TensorView out, TensorView tokens, TensorView wte, TensorView wpe) override;
    void embedding_backward(TensorView dwte, TensorView dwpe, TensorView dout, TensorView tokens) override;
    void layernorm_forward(TensorView out, TensorView mean, TensorView rstd, TensorView inp,
                           TensorView weight, TensorView bias) override;
    void residual_layernorm_forward(TensorView residual_out, TensorView out, TensorView mean, TensorView rstd,
                                    TensorView residual_in, TensorView branch, TensorView weight,
                                    TensorView bias) override;
    void layernorm_backward(TensorView dinp, TensorView dweight, TensorView dbias, TensorView dout,
                            TensorView inp, TensorView weight, TensorView mean, TensorView rstd) override;
    void matmul_forward(TensorView out, TensorView pre_gelu, TensorView inp, TensorView weight,
                        TensorView bias) override;
    void matmul_backward_input(TensorView dinp, TensorView dout, TensorView weight, bool accumulate) override;
    void matmul_backward_weight(TensorView dweight, TensorView dbias, TensorView dout,
                                TensorView inp) override;
    void gelu_forward(TensorView out, TensorView inp) override;
    void gelu_backward(TensorView dinp, TensorView dout, TensorView pre_gelu) override;
    void attention_forward(TensorView out, TensorView lse, TensorView qkv, int n_head) override;
    void attention_backward(TensorView dqkv, TensorView dout, TensorView qkv, TensorView out, TensorView lse,
                            int n_head) override;
    void attention_forward_cached(TensorView out, TensorView qkv, TensorView k_cache, TensorView v_cache,
                                  int position, int n_head) override;
    void classifier(TensorView losses, TensorView logits, TensorView targets, int vocab_size,
                    bool compute_gradient, float gradient_scale, const StepStatus* status) override;
    void grad_norm_squared(StepStatus* status, TensorView grads) override;
    void decide_skip(StepStatus* status) override;
    void adamw_step(TensorView params, TensorView grads, TensorView m, TensorView v, TensorView working,
                    int64_t decay_count, const AdamWHyper& hyper, StepStatus* status) override;
    void update_loss_scale(StepStatus* status, const LossScaleConfig& config) override;
    void cast(TensorView out, TensorView in) override;
    void scale(TensorView x, float factor) override;

private:
    // Runs `call` on the inner backend, adding its wall time to `op`.
    template <typename Call>
    void timed(const std::string& op, Call&& call);

    std::unique_ptr<Backend> inner_;
    std::map<std::string, OpTime> times_;
};

// "matmul_forward 8192x384": a matrix product named with its weight's (N x K) shape.
std::string matmul_label(const char* op, const TensorView& weight);

}  // namespace mixgpt
