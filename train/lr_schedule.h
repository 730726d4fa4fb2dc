// The learning rate as a function of the optimizer step, computed on the host.
//
//   warm-up    steps [0, warmup):  peak * (step + 1) / warmup
//   then       progress p = (step - warmup) / (total - warmup) in [0, 1), and
//     cosine   peak * (f + (1 - f) * (1 + cos(pi p)) / 2)
//     linear   peak * (1 - (1 - f) p)
//     constant peak
//     wsd      warmup-stable-decay: peak while p < 1 - d, then linear down to f over the last d
// where f = final_fraction and d = decay_fraction. The value reaches peak * f only in the limit
// p -> 1, as in nanoGPT and llm.c.
#pragma once

#include <cstdint>
#include <string>

namespace mixgpt {

enum class LrDecay { cosine, linear, constant, wsd };

LrDecay parse_lr_decay(const std::string& name);  // throws Error on an unknown name
const char* lr_decay_name(LrDecay decay);

struct LrSchedule {
    double peak = 6e-4;
    int64_t warmup_steps = 0;
    int64_t total_steps = 1;
    LrDecay decay = LrDecay::cosine;
    double final_fraction = 0.1;
    double decay_fraction = 0.2;  // wsd only

    void validate() const;  // throws Error naming the bad field
    double learning_rate(int64_t step) const;
};

}  // namespace mixgpt
