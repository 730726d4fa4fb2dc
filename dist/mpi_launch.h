// MPI as the launcher of a data-parallel job: one process per GPU (or per CPU rank), started by
// mpirun/mpiexec or by Slurm's srun. A process started any other way stays a single process and
// never touches MPI, so a plain `mixgpt train` needs no MPI runtime.
#pragma once

#include <string>

namespace mixgpt {

// True when an MPI launcher started this process: Open MPI's mpirun (OMPI_COMM_WORLD_SIZE),
// MPICH/Hydra or srun --mpi=pmi2 (PMI_SIZE), PMIx launchers such as srun --mpi=pmix
// (PMIX_RANK), or an srun job step (SLURM_NTASKS together with SLURM_STEP_ID; a batch script's
// own shell has no SLURM_STEP_ID).
bool launched_by_mpi();
// The job's size as the launcher announces it (OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS),
// without starting MPI; 1 when not launched by MPI or when it does not say.
int launcher_world_size();

// Initializes MPI if nobody has (asking for MPI_THREAD_MULTIPLE: the collective watchdog calls
// MPI_Abort from its own thread), and finalizes it on destruction if it was the one to
// initialize it. When destroyed during stack unwinding (the run failed) it does not finalize: the
// process then exits without MPI_Finalize and the launcher ends the other ranks, instead of them
// waiting in a collective for a rank that is gone.
class MpiSession {
public:
    MpiSession();  // throws Error when MPI was finalized already in this process
    ~MpiSession();
    MpiSession(const MpiSession&) = delete;
    MpiSession& operator=(const MpiSession&) = delete;

private:
    bool owns_ = false;
};

// Prints "mixgpt: rank R of W (host H): <message>; aborting the job" on stderr and calls
// MPI_Abort on MPI_COMM_WORLD (where MPI is running; a 1-rank NCCL communicator runs without).
// For the collective timeout; never returns.
[[noreturn]] void abort_mpi_job(const std::string& message);

}  // namespace mixgpt
