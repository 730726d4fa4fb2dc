// The MPI communicator: every collective through MPI on host memory. It serves the CPU backend
// (whose tensors are host memory) and, inside the NCCL communicator, the host-memory collectives
// and NCCL's bootstrap.
//
// Backend-memory collectives are started as non-blocking MPI operations (MPI_Iallreduce,
// MPI_Ireduce_scatter_block, MPI_Iallgather, all in place) and completed together in wait(): with
// buckets, the reduction of one bucket can proceed while the next is being started. Means are
// sums divided by the world size after completion. Every blocking wait runs under the collective
// watchdog, which ends the job (MPI_Abort, naming the rank) after the timeout.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "dist/collective_watchdog.h"
#include "dist/communicator.h"

namespace mixgpt {

class MpiCommunicator final : public Communicator {
public:
    // Works on a duplicate of `comm`, so its messages never meet anyone else's. Blocking waits end
    // the job after timeout_seconds (<= 0: wait forever).
    MpiCommunicator(MPI_Comm comm, double timeout_seconds);
    ~MpiCommunicator() override;
    MpiCommunicator(const MpiCommunicator&) = delete;
    MpiCommunicator& operator=(const MpiCommunicator&) = delete;

    int rank() const override { return rank_; }
    int world_size() const override { return world_size_; }
    int local_rank() const override { return local_rank_; }
    std::string describe() const override;

    void all_reduce(TensorView values, Reduction reduction) override;
    void reduce_scatter_mean(TensorView values) override;
    void all_gather(TensorView values) override;
    void join() override { wait(); }  // the CPU backend reads its buffers at once
    void wait() override;

    void broadcast_host(void* data, size_t bytes, int root) override;
    void all_reduce_sum_host(double* values, int count) override;
    void gather_host(const float* part, float* whole, const std::vector<int64_t>& counts, int root) override;
    std::vector<std::string> all_gather_text(const std::string& text) override;
    void barrier() override;

private:
    // Work left for wait(): a reduce-scatter's result moved from the start of its range (where
    // in-place MPI_Reduce_scatter_block leaves it) to this rank's block, then divided by the world
    // size.
    struct Finish {
        float* destination;
        const float* source;
        int64_t count;
        bool average;
    };

    void start(const char* collective, MPI_Request request);

    CollectiveWatchdog watchdog_;
    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0, world_size_ = 1, local_rank_ = 0;
    std::vector<MPI_Request> requests_;
    std::string pending_collective_;
    std::vector<Finish> finishes_;
};

}  // namespace mixgpt
