#include "dist/process_communicator.h"

#include <algorithm>

#include "dist/device_communicator.h"
#include "dist/mpi_communicator.h"

namespace mixgpt {

ProcessCommunicator::ProcessCommunicator(double timeout_seconds) : timeout_seconds_(timeout_seconds) {
    if (mixgpt::launched_by_mpi()) {
        session_.emplace();
        communicator_ = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, timeout_seconds);
    } else {
        communicator_ = std::make_unique<SingleProcessCommunicator>();
    }
}

int ProcessCommunicator::device_index(int requested) const {
    if (!launched_by_mpi()) return requested;
    return communicator_->local_rank() % std::max(1, cuda_device_count());
}

void ProcessCommunicator::attach_backend(const Backend& backend) {
    if (launched_by_mpi() && backend.cuda_stream() != nullptr)
        communicator_ = make_nccl_communicator(std::move(communicator_), backend, timeout_seconds_);
}

}  // namespace mixgpt
