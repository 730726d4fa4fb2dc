#include "cli/openmp_waits.h"

#include <unistd.h>

#include <cstdlib>

namespace mixgpt::cli {
namespace {

constexpr const char* kDefaultSpinCount = "3000";
// Set with the default, so that the re-executed process knows the setting is mixgpt's, not the user's.
constexpr const char* kDefaultMarker = "MIXGPT_DEFAULT_GOMP_SPINCOUNT";

}  // namespace

void settle_openmp_waits(char** argv) {
    if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
    setenv("GOMP_SPINCOUNT", kDefaultSpinCount, 1);
    setenv(kDefaultMarker, "1", 1);
    execv("/proc/self/exe", argv);
    // No /proc: this process keeps libgomp's default; the variables say otherwise, so take them back.
    unsetenv("GOMP_SPINCOUNT");
    unsetenv(kDefaultMarker);
}

std::string openmp_waits_description() {
    if (const char* policy = std::getenv("OMP_WAIT_POLICY"))
        return std::string("OMP_WAIT_POLICY=") + policy + " (from the environment)";
    const char* spin_count = std::getenv("GOMP_SPINCOUNT");
    if (spin_count == nullptr) return "libgomp's default";
    return std::string("GOMP_SPINCOUNT=") + spin_count +
           (std::getenv(kDefaultMarker) != nullptr ? " (mixgpt's default)" : " (from the environment)");
}

}  // namespace mixgpt::cli
