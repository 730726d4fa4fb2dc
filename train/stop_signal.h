// Graceful stop on SIGINT/SIGTERM: the first signal asks the trainer to finish the current step,
// write a checkpoint and return; a second signal ends the process at once (exit status 128 + signal).
#pragma once

namespace mixgpt {

// Installs the handlers for its lifetime and restores the previous ones afterwards.
// Only one guard may exist at a time.
class StopSignalGuard {
public:
    StopSignalGuard();
    ~StopSignalGuard();
    StopSignalGuard(const StopSignalGuard&) = delete;
    StopSignalGuard& operator=(const StopSignalGuard&) = delete;

    bool stop_requested() const;
    int signal_number() const;  // the first signal received, 0 if none
};

}  // namespace mixgpt
