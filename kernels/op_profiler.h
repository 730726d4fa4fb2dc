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
    size_t attention_scratch_bytes(int64_t seq_len, int64_t n_kv_head) const override {
        return inner_->attention_scratch_bytes(seq_len, n_kv_head);
    }

    // Every op of kernels/ops.def, forwarded and timed.
#define MIXGPT_OP(name, parameters, arguments) void name parameters override;
#include "kernels/ops.def"

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
