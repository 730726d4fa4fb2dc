// Summed per-token losses and what follows from them.
#pragma once

#include <cstdint>

namespace mixgpt {

struct LossTotals {
    double nats = 0;     // sum of the scored tokens' losses (natural log)
    int64_t tokens = 0;  // scored tokens

    double mean_loss() const;   // nats per token
    double perplexity() const;  // exp(mean_loss)
    // Bits per byte of text: nats / ln 2 / bytes, where the bytes covered are the scored tokens
    // times the source's bytes per token.
    double bits_per_byte(double bytes_per_token) const;
};

}  // namespace mixgpt
