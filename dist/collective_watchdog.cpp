#include "dist/collective_watchdog.h"

#include "core/log.h"

namespace mixgpt {

CollectiveWatchdog::CollectiveWatchdog(double timeout_seconds, TimeoutAction on_timeout)
    : timeout_seconds_(timeout_seconds), on_timeout_(std::move(on_timeout)) {
    if (timeout_seconds_ > 0) thread_ = std::thread([this] { run(); });
}

CollectiveWatchdog::~CollectiveWatchdog() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
}

CollectiveWatchdog::Guard CollectiveWatchdog::watch(const std::string& collective) {
    if (timeout_seconds_ > 0) {
        std::lock_guard<std::mutex> lock(mutex_);
        armed_ = true;
        ++generation_;
        collective_ = collective;
        deadline_ = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(timeout_seconds_));
    }
    changed_.notify_all();
    return Guard(*this);
}

void CollectiveWatchdog::disarm() {
    if (timeout_seconds_ <= 0) return;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        armed_ = false;
    }
    changed_.notify_all();
}

void CollectiveWatchdog::run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
        if (!armed_) {
            changed_.wait(lock);
            continue;
        }
        const uint64_t generation = generation_;
        const bool ended = changed_.wait_until(
            lock, deadline_, [&] { return stopping_ || !armed_ || generation_ != generation; });
        if (ended) continue;
        armed_ = false;
        const std::string message =
            format("collective %s did not complete within %g s (another rank died, hangs or skipped it)",
                   collective_.c_str(), timeout_seconds_);
        lock.unlock();
        on_timeout_(message);
        lock.lock();
    }
}

}  // namespace mixgpt
