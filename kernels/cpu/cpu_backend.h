// The CPU reference backend: FP32 arithmetic, OpenMP threads, OpenBLAS sgemm.
// Tensors live in host memory in their own dtypes; every op converts its
// inputs to float, computes in float and rounds its outputs to their dtypes.
// Results are bit-identical for any thread count (see README.md). The op
// definitions are split by family: embedding.cpp, layernorm.cpp, rmsnorm.cpp, matmul.cpp,
// gelu.cpp, relu2.cpp, swiglu.cpp, qk_norm.cpp, attention.cpp, classifier.cpp, optimizer.cpp,
// elementwise.cpp.
#pragma once

#include "kernels/cpu/memory_tracker.h"
#include "kernels/cpu/scratch_pool.h"
#include "kernels/ops.h"
#include "kernels/rope_table.h"

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
    size_t attention_scratch_bytes(int64_t seq_len, int64_t n_kv_head) const override;

    // The ops of kernels/ops.def, defined one family per file (see the top of this file).
#define MIXGPT_OP(name, parameters, arguments) void name parameters override;
#include "kernels/ops.def"

private:
    DType act() const { return activation_dtype(precision_); }
    // dbias (N) f32 += column sums of dout (M, N) act (matmul.cpp).
    void add_bias_gradient(TensorView dbias, TensorView dout, const char* op);
    // RoPE's (positions, head_dim) [cos | sin] table of rows >= positions, or null without RoPE.
    const float* rope_table(const AttentionParams& params, int64_t head_dim, int64_t positions);

    Precision precision_;
    MemoryTracker memory_;
    ScratchPool scratch_{memory_};  // the ops' float temporaries, reused between ops
    RopeTableCache rope_tables_;
};

}  // namespace mixgpt::cpu
