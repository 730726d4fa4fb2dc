// Which process wrote something, told apart from a later process given the same id: the id, the
// process's start time (clock ticks after boot, field 22 of /proc/<pid>/stat) and the host name.
// A process id is reused once its process is gone; the pair (id, start time) is not, until reboot.
#pragma once

#include <cstdint>
#include <string>

namespace mixgpt {

struct ProcessIdentity {
    int64_t pid = 0;
    uint64_t start = 0;  // clock ticks after boot; 0: unknown
    std::string host;

    static ProcessIdentity self();
    // Whether the process it names has ended: on this host, no process `pid` started at `start`.
    // False for a process of another host (it cannot be seen from here) and for this process.
    bool is_gone() const;
};

// This machine's host name ("unknown host" when it has none).
std::string host_name();

// The start time of process `pid` (clock ticks after boot), or 0 when there is no such process.
uint64_t process_start_time(int64_t pid);

}  // namespace mixgpt
