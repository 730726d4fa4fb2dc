// The collective timeout: the watchdog fires once, with a message naming the collective, when a
// wait outlasts the timeout, and never for waits that end in time. End to end, under mpirun with
// 2 ranks (build/mixgpt_mpi_tests --watchdog-scenario): rank 0 waits in a barrier rank 1 never
// enters, and the job ends after the 1 s timeout with a message naming rank 0 and the barrier.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include "dist/collective_watchdog.h"

namespace mixgpt {
namespace {

using std::chrono::milliseconds;

struct Firings {
    std::mutex mutex;
    std::vector<std::string> messages;
    CollectiveWatchdog::TimeoutAction action() {
        return [this](const std::string& message) {
            std::lock_guard<std::mutex> lock(mutex);
            messages.push_back(message);
        };
    }
    std::vector<std::string> seen() {
        std::lock_guard<std::mutex> lock(mutex);
        return messages;
    }
};

TEST(TrainWatchdogTest, FiresOnceForAWaitThatOutlastsTheTimeout) {
    Firings firings;
    CollectiveWatchdog watchdog(0.05, firings.action());
    {
        auto guard = watchdog.watch("barrier");
        std::this_thread::sleep_for(milliseconds(300));
    }
    EXPECT_EQ(firings.seen(),
              std::vector<std::string>{
                  "collective barrier did not complete within 0.05 s (another rank died, hangs "
                  "or skipped it)"});
}

TEST(TrainWatchdogTest, NeverFiresForWaitsThatEndInTime) {
    Firings firings;
    {
        CollectiveWatchdog watchdog(0.2, firings.action());
        for (int i = 0; i < 5; ++i) {  // 300 ms in all, each wait well inside the timeout
            auto guard = watchdog.watch("all_reduce");
            std::this_thread::sleep_for(milliseconds(60));
        }
        std::this_thread::sleep_for(milliseconds(250));  // disarmed: the idle time never counts
    }
    CollectiveWatchdog unlimited(0, firings.action());
    {
        auto guard = unlimited.watch("broadcast");
        std::this_thread::sleep_for(milliseconds(20));
    }
    EXPECT_TRUE(firings.seen().empty());
}

// Output and exit status of a shell command.
std::pair<std::string, int> run_command(const std::string& command) {
    std::string output;
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return {"", -1};
    char chunk[4096];
    while (size_t read = std::fread(chunk, 1, sizeof chunk, pipe)) output.append(chunk, read);
    return {output, pclose(pipe)};
}

TEST(TrainWatchdogTest, AHungCollectiveEndsTheMpiJobNamingTheRank) {
    const std::filesystem::path scenario =
        std::filesystem::read_symlink("/proc/self/exe").parent_path() / "mixgpt_mpi_tests";
    if (!std::filesystem::exists(scenario)) GTEST_SKIP() << scenario << " is not built";
    if (run_command("command -v mpirun >/dev/null 2>&1").second != 0) GTEST_SKIP() << "no mpirun";

    const auto start = std::chrono::steady_clock::now();
    const auto [output, status] = run_command(
        "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 "
        "mpirun -np 2 --bind-to none " +
        scenario.string() + " --watchdog-scenario 1 2>&1");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_NE(status, 0) << output;
    EXPECT_NE(output.find("mixgpt: rank 0 of 2 (host "), std::string::npos) << output;
    EXPECT_NE(output.find("collective barrier did not complete within 1 s"), std::string::npos) << output;
    EXPECT_LT(seconds, 20) << "rank 1 sleeps 30 s: the abort must end it";
    std::printf("watchdog: the hung job ended after %.1f s (timeout 1 s)\n", seconds);
}

}  // namespace
}  // namespace mixgpt
