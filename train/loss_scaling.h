// Loss-scaling policy: how the trainer sets up StepStatus and LossScaleConfig.
//
//   --loss-scale auto           dynamic for fp16, none otherwise (the default)
//   --loss-scale dynamic        start at 2^16, x2 after growth_interval clean steps, x0.5 and skip
//                               the update on Inf/NaN gradients, never below 1
//   --loss-scale static:<v>     a fixed scale v; non-finite gradients still skip the update
//   --loss-scale none           scale 1; non-finite gradients still skip (and count)
//
// The defaults are PyTorch GradScaler's (init 2^16, growth 2 every 2000, backoff 0.5). The scale
// and the skip decision live in backend memory (StepStatus); the host only reads them for logs.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/ops.h"
#include "kernels/precision.h"

namespace mixgpt {

enum class LossScaleMode { none, fixed, dynamic };

struct LossScalePolicy {
    LossScaleMode mode = LossScaleMode::none;
    float initial_scale = 1.f;
    int32_t growth_interval = 2000;

    LossScaleConfig config() const;
    StepStatus initial_status() const;  // the scale set, every counter 0
    std::string describe() const;       // "dynamic (init 65536, growth interval 2000)"
};

// Parses auto|dynamic|static:<value>|none for a run in `precision`; throws Error naming the option.
LossScalePolicy parse_loss_scale(const std::string& text, Precision precision,
                                 int32_t growth_interval = 2000);

}  // namespace mixgpt
