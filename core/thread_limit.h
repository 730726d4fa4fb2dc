// The bound every --threads option is held to. Far more threads than processors only slow a run
// down, and libgomp fails badly when asked for tens of thousands (100000: SIGSEGV in its thread
// start-up; 20000: minutes of thread creation before the first loop).
#pragma once

#include <string>

namespace mixgpt {

// Processors online (sysconf(_SC_NPROCESSORS_ONLN)), at least 1.
int processors_online();

// kThreadsPerProcessor threads per processor online.
constexpr int kThreadsPerProcessor = 4;
int max_threads();

// "" when 0 <= threads <= max_threads(), else the reason, e.g. "100000 is more than 8 (4 per
// processor, 2 processors here); 0 means the default (one per processor)".
std::string threads_problem(long long threads);

}  // namespace mixgpt
