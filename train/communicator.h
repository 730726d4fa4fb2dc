// Collectives between the processes of one training job.
//
// The trainer calls all_reduce_mean on the gradient arena once per optimizer step, after the
// last micro-step's backward (the gradients are final there) and before the norm and the update.
// Only the single-process implementation exists now; MPI (host buffers) and NCCL (device
// buffers) implementations plug in behind the same interface.
#pragma once

#include <memory>

#include "core/tensor.h"

namespace mixgpt {

class Communicator {
public:
    virtual ~Communicator() = default;

    virtual int rank() const = 0;
    virtual int world_size() const = 0;
    virtual int local_rank() const = 0;  // rank among the processes of this node (picks the GPU)

    // values (n) f32 in backend memory = the element-wise mean over all ranks.
    virtual void all_reduce_mean(TensorView values) = 0;
    // values (any dtype) on every rank = the values of rank `root`.
    virtual void broadcast(TensorView values, int root) = 0;
    virtual void barrier() = 0;
};

// One process: rank 0 of 1; every collective is the identity.
class SingleProcessCommunicator final : public Communicator {
public:
    int rank() const override { return 0; }
    int world_size() const override { return 1; }
    int local_rank() const override { return 0; }
    void all_reduce_mean(TensorView values) override;
    void broadcast(TensorView values, int root) override;
    void barrier() override {}
};

}  // namespace mixgpt
