// cp.async for the running simulated thread (async_copy.cpp): a copy of `bytes` from `global`
// (zeros when !valid) that lands in shared memory when the schedule says (block_runner.h:
// Schedule): at the wait that completes its group (forward), or when issued (backward). Each copy
// checks its addresses (a fault otherwise) and counts its store's bank conflicts under the owner
// "cp.async" (bank_conflicts.h).
#pragma once

#include <cstddef>

namespace mixgpt::cuda_sim {

void copy_async(void* shared, const void* global, size_t bytes, bool valid);
void copy_async_commit();
void copy_async_wait(int pending_groups);

}  // namespace mixgpt::cuda_sim
