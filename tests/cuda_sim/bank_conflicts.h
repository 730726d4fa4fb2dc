// Shared-memory bank conflicts, counted as a launch runs (bank_conflicts.cpp). Loads and stores
// through SharedPointer (shared_pointer.h) and cp.async's stores are recorded per lane; when a
// warp stops (a collective, a barrier, exit), the k-th time each of its lanes ran one kernel
// instruction forms one warp-wide request. ldmatrix phases are counted by warp_matrix.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace mixgpt::cuda_sim {

// Shared-memory accesses of one owner (shared_pointer.h), counted the way the hardware serves
// them: each warp-wide load or store instruction is one request, split into phases (every lane
// for accesses of up to 4 bytes, half-warps for 8, quarter-warps for 16); a phase takes one
// wavefront per distinct 4-byte word on its busiest bank (32 banks, 4 bytes wide; lanes reading
// one word share it), so a phase whose lanes touch n words of one bank costs n - 1 extra.
struct SharedAccessCounts {
    uint64_t requests = 0;          // warp-wide instructions
    uint64_t phases = 0;            // phases with at least one active lane
    uint64_t extra_wavefronts = 0;  // wavefronts beyond one per phase
    int worst_phase = 0;            // the most wavefronts one phase took (1: no conflict)
};

// What the simulator counted since the last reset: shared-memory traffic whose lanes' addresses
// it sees at once. An ldmatrix.x4 reads 4 matrices, each in one phase of 8 16-byte rows; a phase
// whose rows share a bank (4 bytes wide, 32 of them) takes one more wavefront per repeat. Loads
// and stores through SharedPointer and cp.async's stores are counted per owner: the function
// that took the pointer, or "cp.async".
struct Counters {
    uint64_t ldmatrix_phases = 0;
    uint64_t ldmatrix_extra_wavefronts = 0;
    std::map<std::string, SharedAccessCounts> shared_accesses;  // by owner
};
Counters counters();
void reset_counters();

// Counts one ldmatrix phase that needed `extra_wavefronts` beyond the first.
void count_ldmatrix_phase(int extra_wavefronts);

// Records the running lane's access of `bytes` of shared memory at `address`, made by the kernel
// instruction this function returns to. The lanes of a warp that run the same instruction for the
// same time since the warp last stopped are one request; they are counted under `owner` when the
// warp stops (a collective, a barrier, exit).
__attribute__((noinline)) void record_shared_access(const char* owner, const void* address, size_t bytes);

}  // namespace mixgpt::cuda_sim
