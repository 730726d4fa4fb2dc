// A bound on how long a rank waits in one collective. Without it a rank that died, hangs or
// skipped a collective would leave every other rank waiting forever.
//
// The communicator arms the watchdog around each blocking wait (watch() returns a guard); when a
// wait is still armed after the timeout, the watchdog's thread calls the timeout action with a
// message naming the collective. The MPI and NCCL communicators' action prints the rank and
// that message and calls MPI_Abort, which ends the whole job; checkpoints are written atomically
// (model/checkpoint.h), so the last complete one stays valid.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace mixgpt {

class CollectiveWatchdog {
public:
    using TimeoutAction = std::function<void(const std::string& message)>;

    // timeout_seconds <= 0: never fires (no thread). The action runs on the watchdog's thread,
    // at most once per armed wait.
    CollectiveWatchdog(double timeout_seconds, TimeoutAction on_timeout);
    ~CollectiveWatchdog();
    CollectiveWatchdog(const CollectiveWatchdog&) = delete;
    CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

    class Guard {
    public:
        ~Guard() { watchdog_.disarm(); }
        Guard(const Guard&) = delete;
        Guard& operator=(const Guard&) = delete;

    private:
        friend class CollectiveWatchdog;
        explicit Guard(CollectiveWatchdog& watchdog) : watchdog_(watchdog) {}
        CollectiveWatchdog& watchdog_;
    };

    // Arms the watchdog for the collective named until the guard goes out of scope.
    [[nodiscard]] Guard watch(const std::string& collective);

    double timeout_seconds() const { return timeout_seconds_; }

private:
    void disarm();
    void run();

    double timeout_seconds_;
    TimeoutAction on_timeout_;
    std::mutex mutex_;
    std::condition_variable changed_;
    bool armed_ = false;
    bool stopping_ = false;
    uint64_t generation_ = 0;  // counts arms, so a wait that ended and another that began differ
    std::string collective_;
    std::chrono::steady_clock::time_point deadline_;
    std::thread thread_;
};

}  // namespace mixgpt
