// Collectives between the processes (ranks) of one data-parallel training job.
//
// Two kinds of operations:
// - On backend memory (gradients, parameters, the StepStatus): asynchronous. They start in call
//   order, each after the backend work enqueued before it (on a CUDA backend they wait for its
//   stream, without blocking the host), so a collective may be started on buffers the backend is
//   still computing. Until a collective completes, neither the backend nor the host may touch its
//   buffers: join() makes backend work enqueued afterwards wait for every started collective, and
//   wait() blocks the host until they are done.
// - On host memory (checkpoints, losses, start-up lines, agreement on stopping): blocking.
//
// Blocks: reduce_scatter_mean and all_gather cut their 1-D view into W equal blocks, block r
// being rank r's, as ncclReduceScatter and ncclAllGather do in place (ZeRO-1 pads its arena so
// that every collective splits evenly: dist/shard_layout.h).
//
// Implementations: SingleProcessCommunicator (here), MpiCommunicator (dist/mpi_communicator.h:
// host-memory buffers, so the CPU backend) and NcclCommunicator (train/cuda/: device buffers).
// Every blocking wait of the multi-process ones is bounded by the collective timeout
// (dist/collective_watchdog.h).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace mixgpt {

enum class Reduction { sum, mean, max };

class Communicator {
public:
    virtual ~Communicator() = default;

    virtual int rank() const = 0;
    virtual int world_size() const = 0;
    virtual int local_rank() const = 0;  // rank among the processes of this node (picks the GPU)
    // Where this rank runs, for the start-up lines: "host node07" or "host node07, NCCL 2.28.9".
    virtual std::string describe() const = 0;

    // ---- backend memory, asynchronous ----
    // values (n) f32 = the element-wise sum, mean or maximum over ranks.
    virtual void all_reduce(TensorView values, Reduction reduction) = 0;
    // values (W * c) f32: this rank's block becomes the element-wise mean over ranks of that
    // block; the other blocks are left unspecified.
    virtual void reduce_scatter_mean(TensorView values) = 0;
    // values (W * c) any dtype: every rank's block, as that rank holds it, is copied into the same
    // block on every rank.
    virtual void all_gather(TensorView values) = 0;
    // Backend work enqueued from now on runs after every backend-memory collective started. Does
    // not block the host where the backend's work is asynchronous (CUDA); elsewhere it is wait().
    virtual void join() = 0;
    // The host waits until every backend-memory collective started is complete.
    virtual void wait() = 0;

    // ---- host memory, blocking ----
    virtual void broadcast_host(void* data, size_t bytes, int root) = 0;
    // values (count) = the element-wise sum over ranks.
    virtual void all_reduce_sum_host(double* values, int count) = 0;
    // part (counts[rank()]) of every rank, concatenated in rank order into whole (sum of counts) on
    // root; whole is not touched elsewhere (may be null there).
    virtual void gather_host(const float* part, float* whole, const std::vector<int64_t>& counts,
                             int root) = 0;
    // Every rank's text, indexed by rank, on every rank.
    virtual std::vector<std::string> all_gather_text(const std::string& text) = 0;
    virtual void barrier() = 0;
};

// One process: rank 0 of 1; every collective leaves the data as it is.
class SingleProcessCommunicator final : public Communicator {
public:
    int rank() const override { return 0; }
    int world_size() const override { return 1; }
    int local_rank() const override { return 0; }
    std::string describe() const override;

    void all_reduce(TensorView values, Reduction reduction) override;
    void reduce_scatter_mean(TensorView values) override;
    void all_gather(TensorView values) override;
    void join() override {}
    void wait() override {}

    void broadcast_host(void* data, size_t bytes, int root) override;
    void all_reduce_sum_host(double*, int) override {}
    void gather_host(const float* part, float* whole, const std::vector<int64_t>& counts, int root) override;
    std::vector<std::string> all_gather_text(const std::string& text) override { return {text}; }
    void barrier() override {}
};

// Checks shared by the implementations; throw Error naming the collective.
void require_f32(const TensorView& values, const char* collective);
// The block size c of a view of W * c elements.
int64_t require_blocks(const TensorView& values, int world_size, const char* collective);
void require_root(int root, int world_size, const char* collective);


}  // namespace mixgpt
