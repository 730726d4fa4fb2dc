#include "tests/mpi/watchdog_scenario.h"

#include <chrono>
#include <thread>

#include "dist/mpi_communicator.h"

namespace mixgpt::testing_support {

void hang_in_a_barrier(double timeout_seconds) {
    MpiCommunicator communicator(MPI_COMM_WORLD, timeout_seconds);
    if (communicator.rank() == 0)
        communicator.barrier();
    else
        std::this_thread::sleep_for(std::chrono::seconds(30));  // ended by rank 0's MPI_Abort
}

}  // namespace mixgpt::testing_support
