// The NCCL communicator (CUDA builds only): backend-memory collectives on device buffers through
// NCCL, on a stream of its own; host-memory collectives through the MPI communicator it wraps,
// which also carries NCCL's unique id from rank 0 to the others.
//
// ZeRO-1's collectives are ncclReduceScatter (ncclAvg) and ncclAllGather, in place, on W equal
// blocks (dist/shard_layout.h pads the arena so that every bucket splits evenly). Means use
// ncclAvg.
//
// Ordering with the backend's compute stream, by events, never by blocking the host: each
// collective first makes the NCCL stream wait for the work enqueued on the compute stream so far
// (its inputs are final then); join() makes the compute stream wait for the NCCL stream. So
// gradient buckets are reduced while the backward pass goes on computing the others.
// wait() synchronizes the NCCL stream under the collective watchdog, then asks NCCL for an
// asynchronous error (ranks that disagreed on a collective).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <memory>
#include <string>

#include "dist/collective_watchdog.h"
#include "dist/communicator.h"

namespace mixgpt {

class NcclCommunicator final : public Communicator {
public:
    // On the current CUDA device (the backend has set it), named by `device` ("cuda:0 (NVIDIA
    // H100 ...)"), which no other rank on this host may use; `host` spans the same ranks;
    // compute_stream is the backend's stream, which outlives this communicator.
    NcclCommunicator(std::unique_ptr<Communicator> host, cudaStream_t compute_stream,
                     const std::string& device, double timeout_seconds);
    ~NcclCommunicator() override;
    NcclCommunicator(const NcclCommunicator&) = delete;
    NcclCommunicator& operator=(const NcclCommunicator&) = delete;

    int rank() const override { return host_->rank(); }
    int world_size() const override { return host_->world_size(); }
    int local_rank() const override { return host_->local_rank(); }
    std::string describe() const override;  // "host node07, NCCL 2.28.9"

    void all_reduce(TensorView values, Reduction reduction) override;
    void reduce_scatter_mean(TensorView values) override;
    void all_gather(TensorView values) override;
    void join() override;
    void wait() override;

    void broadcast_host(void* data, size_t bytes, int root) override {
        host_->broadcast_host(data, bytes, root);
    }
    void all_reduce_sum_host(double* values, int count) override {
        host_->all_reduce_sum_host(values, count);
    }
    void gather_host(const float* part, float* whole, const std::vector<int64_t>& counts, int root) override {
        host_->gather_host(part, whole, counts, root);
    }
    std::vector<std::string> all_gather_text(const std::string& text) override {
        return host_->all_gather_text(text);
    }
    void barrier() override { host_->barrier(); }

private:
    // The NCCL stream waits for the compute stream's work so far; names the first pending collective.
    void start(const char* collective);

    std::unique_ptr<Communicator> host_;
    CollectiveWatchdog watchdog_;
    ncclComm_t comm_ = nullptr;
    cudaStream_t stream_ = nullptr;            // the collectives'
    cudaStream_t compute_stream_ = nullptr;    // the backend's
    cudaEvent_t compute_point_ = nullptr;      // recorded on the compute stream before a collective
    cudaEvent_t collectives_point_ = nullptr;  // recorded on the NCCL stream by join()
    std::string pending_collective_;
};

// "2.28.9": the version of the NCCL library loaded.
std::string nccl_version();

}  // namespace mixgpt
