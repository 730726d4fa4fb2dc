#include "tests/cuda_sim/async_copy.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "tests/cuda_sim/simulated_block.h"

namespace mixgpt::cuda_sim {

void land_copies(SimThread& thread, size_t pending) {
    while (thread.committed_groups.size() > pending) {
        for (const PendingCopy& copy : thread.committed_groups.front())
            std::memcpy(copy.shared, copy.data, copy.bytes);
        thread.committed_groups.pop_front();
    }
}

void copy_async(void* shared, const void* global, size_t bytes, bool valid) {
    expect_shared("cp.async", shared, bytes, bytes);
    if (valid && reinterpret_cast<uintptr_t>(global) % bytes != 0)
        fault("cp.async: global address not " + std::to_string(bytes) + "-byte aligned");
    record_access(__builtin_return_address(0), "cp.async", shared, bytes);
    PendingCopy copy{shared, {}, bytes};
    if (valid) std::memcpy(copy.data, global, bytes);
    if (schedule() == Schedule::backward)
        std::memcpy(shared, copy.data, bytes);
    else
        current_block().running->open_group.push_back(copy);
}

void copy_async_commit() {
    SimThread& self = *current_block().running;
    self.committed_groups.push_back(std::move(self.open_group));
    self.open_group.clear();
}

void copy_async_wait(int pending_groups) {
    land_copies(*current_block().running, static_cast<size_t>(pending_groups));
}

}  // namespace mixgpt::cuda_sim
