// The CPU reference backend: FP32 arithmetic, OpenMP threads, OpenBLAS sgemm.
// Tensors live in host memory in their own dtypes; every op converts its
// inputs to float, computes in float and rounds its outputs to their dtypes.
// Results are bit-identical for any thread count (see README.md). The op
// definitions are split by family: embedding.cpp, layernorm.cpp, matmul.cpp,
// gelu.cpp, attention.cpp, classifier.cpp, optimizer.cpp, elementwise.cpp.
#pragma once

#include "kernels/cpu/memory_tracker.h"
#include "kernels/cpu/scratch_pool.h"
#include "kernels/ops.h"

namespace mixgpt::cpu {

class CpuBackend final : public Backend {
public:
    explicit CpuBackend(const BackendOptions& options);

    std::string name() const override;
    Precision precision() const override { return precision_; }

    Buffer allocate(size_t bytes) override;
    Buffer allocate_host_staging(size_t bytes) override;
    void copy_to_backend(void* destination, const void* host_source, size_t bytes) override;
    void copy_to_host(void* host_destination, const void* source, size_t bytes) override;
    void copy_within(void* destination, const void* source, size_t bytes) override;
    void fill_zero(void* destination, size_t bytes) override;
    void synchronize() override {}
    size_t peak_memory_bytes() const override;
    AvailableMemory available_memory() const override { return host_available_memory(); }
    size_t attention_scratch_bytes(int64_t seq_len) const override;

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
    DType act() const { return activation_dtype(precision_); }

    Precision precision_;
    MemoryTracker memory_;
    ScratchPool scratch_{memory_};  // the ops' float temporaries, reused between ops
};

}  // namespace mixgpt::cpu
