// How the CPU backend's idle OpenMP threads wait (kernels/cpu/README.md, "Threads under load").
// libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, when it is loaded, before main runs, and
// its default (spin 300,000 times at every barrier) made training 1.7x slower beside one busy
// process on 2 cores. So when the user set neither, main sets GOMP_SPINCOUNT=3000 and executes
// mixgpt again, once, with the same arguments; where that fails it goes on with libgomp's default.
// (Setting it from the executable's .preinit_array does not work: glibc's own initializer, which
// runs after it, resets the environment to the one the process was started with.)
#pragma once

#include <string>

namespace mixgpt::cli {

// Call first in main: returns only when the wait is settled (after the re-execution, or when the
// user chose, or when the re-execution failed).
void settle_openmp_waits(char** argv);

// "GOMP_SPINCOUNT=3000 (mixgpt's default)", "OMP_WAIT_POLICY=passive (from the environment)", ...
std::string openmp_waits_description();

}  // namespace mixgpt::cli
