// How much memory this process can still allocate, and which limit says so: the figure the
// training run's memory plan is compared with before anything large is allocated.
#pragma once

#include <cstddef>
#include <string>

namespace mixgpt {

struct AvailableMemory {
    size_t bytes = 0;
    std::string source;  // the binding limit: "MemAvailable", "cgroup memory.max", "RLIMIT_AS", ...
};

// Host memory: the smallest of /proc/meminfo's MemAvailable, the cgroup's limit less its usage
// (cgroup v2 memory.max, or v1 memory.limit_in_bytes) and RLIMIT_AS less this process's address
// space. A limit that cannot be read does not bind.
AvailableMemory host_available_memory();

// RLIMIT_AS (ulimit -v) less this process's address space (VmSize); SIZE_MAX when there is no limit.
// Reserved but untouched memory counts here (OpenBLAS's buffers), not in the others.
size_t address_space_headroom();

}  // namespace mixgpt
