// Graceful stop on SIGINT/SIGTERM: the first signal only sets a flag that the work polls (the
// trainer finishes the current step, writes a checkpoint and returns; export and import stop at the
// next file and remove their temporaries; prepare stops between documents, keeping its complete
// shards); a second signal ends the process at once (exit status 128 + signal), leaving
// temporaries that the next start removes (atomic_file.h).
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
