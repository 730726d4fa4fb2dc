#include "core/available_memory.h"

#include <sys/resource.h>

#include <fstream>
#include <limits>
#include <sstream>

namespace mixgpt {
namespace {

constexpr size_t kUnlimited = std::numeric_limits<size_t>::max();

// The value (in kB) of `key` in a /proc file of "Key:   value kB" lines; kUnlimited when absent.
size_t proc_kilobytes(const std::string& path, const std::string& key) {
    std::ifstream file(path);
    for (std::string line; std::getline(file, line);) {
        if (line.compare(0, key.size() + 1, key + ":") != 0) continue;
        std::istringstream value(line.substr(key.size() + 1));
        size_t kilobytes = 0;
        if (value >> kilobytes) return kilobytes * 1024;
    }
    return kUnlimited;
}

// A file holding one number of bytes ("max" or a missing file: kUnlimited).
size_t file_bytes(const std::string& path) {
    std::ifstream file(path);
    std::string text;
    if (!(file >> text) || text == "max") return kUnlimited;
    try {
        return static_cast<size_t>(std::stoull(text));
    } catch (const std::exception&) {
        return kUnlimited;
    }
}

// This process's cgroup directory under /sys/fs/cgroup: "0::/path" (v2) or "N:memory:/path" (v1).
std::string cgroup_directory(bool& version2) {
    std::ifstream file("/proc/self/cgroup");
    std::string v1_path;
    for (std::string line; std::getline(file, line);) {
        if (line.compare(0, 3, "0::") == 0) {
            version2 = true;
            return "/sys/fs/cgroup" + line.substr(3);
        }
        const size_t memory = line.find(":memory:");
        if (memory != std::string::npos) v1_path = "/sys/fs/cgroup/memory" + line.substr(memory + 8);
    }
    version2 = false;
    return v1_path;
}

void bind(AvailableMemory& available, size_t bytes, const std::string& source) {
    if (bytes < available.bytes) available = {bytes, source};
}

}  // namespace

AvailableMemory host_available_memory() {
    AvailableMemory available{kUnlimited, "no known limit"};
    bind(available, proc_kilobytes("/proc/meminfo", "MemAvailable"), "MemAvailable");

    bool version2 = false;
    const std::string cgroup = cgroup_directory(version2);
    if (!cgroup.empty()) {
        const size_t limit = file_bytes(cgroup + (version2 ? "/memory.max" : "/memory.limit_in_bytes"));
        const size_t usage = file_bytes(cgroup + (version2 ? "/memory.current" : "/memory.usage_in_bytes"));
        if (limit != kUnlimited)
            bind(available, usage != kUnlimited && usage < limit ? limit - usage : 0,
                 version2 ? "cgroup memory.max" : "cgroup memory.limit_in_bytes");
    }

    const size_t headroom = address_space_headroom();
    if (headroom != kUnlimited) bind(available, headroom, "RLIMIT_AS (ulimit -v)");
    return available;
}

size_t address_space_headroom() {
    struct rlimit address_space {};
    if (::getrlimit(RLIMIT_AS, &address_space) != 0 || address_space.rlim_cur == RLIM_INFINITY)
        return kUnlimited;
    const size_t limit = static_cast<size_t>(address_space.rlim_cur);
    const size_t used = proc_kilobytes("/proc/self/status", "VmSize");
    return used != kUnlimited && used < limit ? limit - used : 0;
}

}  // namespace mixgpt
