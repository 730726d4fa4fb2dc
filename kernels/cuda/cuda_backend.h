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
#include "kernels/rope_table.h"

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
    // The fp32 attention's score matrices (attention_products.h) at their largest for this shape;
    // its other scratch regions (kernels/cuda/scratch.h) are small and not counted.
    size_t attention_scratch_bytes(int64_t seq_len, int64_t n_kv_head) const override;

    // The ops of kernels/ops.def, defined one family per .cu file.
#define MIXGPT_OP(name, parameters, arguments) void name parameters override;
#include "kernels/ops.def"

private:
    // Uploads at most this large go through the pinned bounce buffer, so the call
    // returns without waiting for the GPU; larger ones are synchronous copies.
    static constexpr size_t kBounceBytes = size_t{8} << 20;

    Precision precision_ = Precision::fp32;
    bool flash_attention_ = true;          // fused kernels where flash_attention_supported(), fp32 products
    size_t attention_products_bytes_ = 0;  // BackendOptions::attention_products_bytes
    bool attention_products_refused_ = false;  // cuBLASLt offered no algorithm for one of their products
    std::string name_;
    int multiprocessors_ = 0;
    size_t shared_memory_optin_ = 0;  // the most dynamic shared memory one block may opt into
    cudaStream_t stream_ = nullptr;
    cudaEvent_t bounce_free_ = nullptr;  // recorded after the last upload out of the bounce buffer
    std::unique_ptr<DeviceAllocator> allocator_;
    Buffer bounce_;
    std::unique_ptr<LtMatmulRunner> matmuls_;
    std::unique_ptr<ScratchSpace> scratch_;
    RopeTableCache rope_tables_;  // RoPE's table on the host, and below on the device
    Buffer rope_device_;

    // RoPE's (rows >= positions, head_dim) [cos | sin] table in device memory (kernels/rope_table.h),
    // uploaded when theta or head_dim change or more positions are asked for; invalid without RoPE.
    TensorView rope_table(const AttentionParams& params, int64_t head_dim, int64_t positions);
    // params for the flash kernels, which take a sliding window folded into the document bounds:
    // unchanged without a window, else with bounds (B,T) i32 in scratch (document_mask.cu) where
    // each position's first key is max(its document's start, t - window + 1) and its last query
    // min(its document's end, t + window) - 1, and window 0.
    AttentionParams folded_window(const AttentionParams& params, int64_t B, int64_t T);
    // Key/value heads per chunk of the fp32 attention's products for qkv of dtype `act` with T rows
    // and Hkv key/value heads; 0 where they do not apply (attention.cu).
    int64_t attention_products_chunk(DType act, int64_t T, int64_t Hkv) const;
    // Whether the fp32 products did the op: "" from them (done), else their refused product, which
    // is logged once and turns them off for the backend's life (attention.cu).
    bool attention_products_done(const std::string& refused);
    // dbias (N) f32 += column sums of dout (M, N) act, deterministic (matmul.cu).
    void add_bias_gradient(TensorView dbias, TensorView dout);
};

}  // namespace mixgpt::cuda
