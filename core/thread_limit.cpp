#include "core/thread_limit.h"

#include <unistd.h>

#include <algorithm>

#include "core/log.h"

namespace mixgpt {

int processors_online() {
    const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? static_cast<int>(std::min<long>(online, 1 << 20)) : 1;
}

int max_threads() { return kThreadsPerProcessor * processors_online(); }

std::string threads_problem(long long threads) {
    if (threads < 0) return format("%lld is negative; 0 means the default (one per processor)", threads);
    if (threads <= max_threads()) return "";
    return format(
        "%lld is more than %d (%d per processor, %d processor%s here); 0 means the default (one per "
        "processor)",
        threads, max_threads(), kThreadsPerProcessor, processors_online(),
        processors_online() == 1 ? "" : "s");
}

}  // namespace mixgpt
