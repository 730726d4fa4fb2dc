#include "dist/mpi_launch.h"

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "core/mpi_check.h"
#include "core/process_identity.h"
#include "dist/communicator.h"

namespace mixgpt {
namespace {

bool has_environment(const char* name) { return std::getenv(name) != nullptr; }

}  // namespace

bool launched_by_mpi() {
    return has_environment("OMPI_COMM_WORLD_SIZE") || has_environment("PMI_SIZE") ||
           has_environment("PMIX_RANK") ||
           (has_environment("SLURM_NTASKS") && has_environment("SLURM_STEP_ID"));
}

int launcher_world_size() {
    if (!launched_by_mpi()) return 1;
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
        const char* value = std::getenv(name);
        if (value == nullptr) continue;
        char* end = nullptr;
        const long size = std::strtol(value, &end, 10);
        if (end != value && *end == '\0' && size >= 1 && size <= 1 << 24) return static_cast<int>(size);
    }
    return 1;
}

MpiSession::MpiSession() {
    int finalized = 0, initialized = 0;
    MPI_CHECK(MPI_Finalized(&finalized));
    MIXGPT_REQUIRE(!finalized, "MPI: already finalized in this process (one MPI training run per process)");
    MPI_CHECK(MPI_Initialized(&initialized));
    if (initialized) return;
    int provided = 0;
    MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
    owns_ = true;
}

MpiSession::~MpiSession() {
    if (owns_ && std::uncaught_exceptions() == 0) MPI_Finalize();
}

void abort_mpi_job(const std::string& message) {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    const bool mpi = initialized != 0 && finalized == 0;  // not so for NCCL over one process
    int rank = 0, world = 1;
    if (mpi) {
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &world);
    }
    std::fprintf(stderr, "mixgpt: rank %d of %d (host %s): %s; aborting the job\n", rank, world,
                 host_name().c_str(), message.c_str());
    std::fflush(stderr);
    if (mpi) MPI_Abort(MPI_COMM_WORLD, 3);
    std::abort();
}

}  // namespace mixgpt
