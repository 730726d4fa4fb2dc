#include "eval/loss_totals.h"

#include <cmath>
#include <limits>

namespace mixgpt {

double LossTotals::mean_loss() const {
    return tokens > 0 ? nats / static_cast<double>(tokens) : std::numeric_limits<double>::quiet_NaN();
}

double LossTotals::perplexity() const { return std::exp(mean_loss()); }

double LossTotals::bits_per_byte(double bytes_per_token) const {
    return nats / std::log(2.0) / (static_cast<double>(tokens) * bytes_per_token);
}

}  // namespace mixgpt
