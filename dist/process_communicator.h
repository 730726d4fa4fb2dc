// The communicator of one `mixgpt train` process, chosen by how it was started and its device:
//
//   not started by an MPI launcher          SingleProcessCommunicator (MPI is never touched)
//   started by mpirun / srun, CPU backend   MpiCommunicator over MPI_COMM_WORLD
//   started by mpirun / srun, CUDA backend  NcclCommunicator over that MpiCommunicator
//
// Made in two steps: a rank's GPU is chosen by its local rank, and NCCL starts only after the
// backend has selected that GPU (its collectives are ordered with the backend's stream).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "kernels/ops.h"
#include "dist/communicator.h"
#include "dist/mpi_launch.h"

namespace mixgpt {

class ProcessCommunicator {
public:
    // Initializes MPI when launched by MPI; collectives end the job after timeout_seconds.
    explicit ProcessCommunicator(double timeout_seconds);

    bool launched_by_mpi() const { return session_.has_value(); }
    // The CUDA device of this rank: when launched by MPI, its local rank modulo the devices it
    // sees (a launcher may show each rank only its own GPU); otherwise `requested`.
    int device_index(int requested) const;
    // After the backend exists: switches to NCCL for a CUDA backend when launched by MPI.
    void attach_backend(const Backend& backend);
    Communicator& get() const { return *communicator_; }

private:
    double timeout_seconds_;
    std::optional<MpiSession> session_;
    std::unique_ptr<Communicator> communicator_;
};

}  // namespace mixgpt
