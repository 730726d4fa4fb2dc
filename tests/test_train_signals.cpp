// SIGINT/SIGTERM handling: the first signal only requests a stop, a second one ends the process
// at once with 128 + signal, and the previous handlers come back afterwards.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include "core/stop_signal.h"

namespace mixgpt {
namespace {

TEST(TrainSignalTest, FirstSignalRequestsAStopSecondExitsAtOnce) {
    const pid_t pid = fork();
    if (pid == 0) {
        StopSignalGuard guard;
        if (guard.stop_requested()) _exit(1);
        std::raise(SIGTERM);
        if (!guard.stop_requested() || guard.signal_number() != SIGTERM) _exit(2);
        std::raise(SIGINT);
        _exit(3);  // not reached
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
}

void ignore_signal(int) {}

TEST(TrainSignalTest, RestoresThePreviousHandlers) {
    struct sigaction custom {
    }, previous{}, restored{};
    custom.sa_handler = ignore_signal;
    sigemptyset(&custom.sa_mask);
    ASSERT_EQ(sigaction(SIGTERM, &custom, &previous), 0);
    {
        StopSignalGuard guard;
        std::raise(SIGTERM);
        EXPECT_TRUE(guard.stop_requested());
    }
    ASSERT_EQ(sigaction(SIGTERM, &previous, &restored), 0);
    EXPECT_EQ(restored.sa_handler, ignore_signal);
    StopSignalGuard fresh;
    EXPECT_FALSE(fresh.stop_requested());
}

}  // namespace
}  // namespace mixgpt
