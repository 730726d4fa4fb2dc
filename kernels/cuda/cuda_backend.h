// The CUDA implementation of the op interface (kernels/ops.h).
//
// One compute stream per backend; every op is enqueued on it. The class is
// declared here and defined across one .cu file per op family: each file holds
// the file-local kernels, their launchers (taking the stream) and the public
// methods that check shapes and dtypes. Only kernels/cuda includes this header;
// everything else reaches the backend through make_backend.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "core/memory.h"
#include "kernels/cuda/cublaslt_matmul.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/scratch.h"
#include "kernels/ops.h"

namespace mixgpt::cuda {

class CudaBackend final : public Backend {
public:
    explicit CudaBackend(const BackendOptions& options);
    ~CudaBackend() override;
    CudaBackend(const CudaBackend&) = delete;
    CudaBackend& operator=(const CudaBackend&) = delete;

    std::string name() const override { return name_; }
    Precision precision() const override { return precision_; }

    Buffer allocate(size_t bytes) override;
    Buffer allocate_host_staging(size_t bytes) override;
    void copy_to_backend(void* destination, const void* host_source, size_t bytes) override;
    void copy_to_host(void* host_destination, const void* source, size_t bytes) override;
    void copy_within(void* destination, const void* source, size_t bytes) override;
    void fill_zero(void* destination, size_t bytes) override;
    void synchronize() override;
    void* cuda_stream() const override { return stream_; }
    size_t peak_memory_bytes() const override;
    AvailableMemory available_memory() const override;
    // Its attention scratch is a Buffer (kernels/cuda/scratch.h), not counted here.
    size_t attention_scratch_bytes(int64_t) const override { return 0; }

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
    // Uploads at most this large go through the pinned bounce buffer, so the call
    // returns without waiting for the GPU; larger ones are synchronous copies.
    static constexpr size_t kBounceBytes = size_t{8} << 20;

    Precision precision_ = Precision::fp32;
    bool flash_attention_ = true;  // fused kernels where flash_attention_supported()
    std::string name_;
    int multiprocessors_ = 0;
    size_t shared_memory_optin_ = 0;  // the most dynamic shared memory one block may opt into
    cudaStream_t stream_ = nullptr;
    cudaEvent_t bounce_free_ = nullptr;  // recorded after the last upload out of the bounce buffer
    std::unique_ptr<DeviceAllocator> allocator_;
    Buffer bounce_;
    std::unique_ptr<LtMatmulRunner> matmuls_;
    std::unique_ptr<ScratchSpace> scratch_;
};

}  // namespace mixgpt::cuda
