// Ranks other than 0 of a training run log errors only, while the run lasts (train/trainer.h:
// rank 0 alone logs).
#pragma once

#include "core/log.h"

namespace mixgpt {

class QuietUnlessRoot {
public:
    explicit QuietUnlessRoot(bool root) : previous_(log_level()) {
        if (!root) set_log_level(LogLevel::error);
    }
    ~QuietUnlessRoot() { set_log_level(previous_); }
    QuietUnlessRoot(const QuietUnlessRoot&) = delete;
    QuietUnlessRoot& operator=(const QuietUnlessRoot&) = delete;

private:
    LogLevel previous_;
};

}  // namespace mixgpt
