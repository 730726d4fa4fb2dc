#include "kernels/rope_table.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace mixgpt {

std::vector<float> rope_table(float theta, int head_dim, int64_t positions) {
    MIXGPT_REQUIRE(theta > 0.f && head_dim > 0 && head_dim % 2 == 0 && positions >= 0,
                   "rope_table: theta > 0, an even head_dim and positions >= 0 are needed");
    const int half = head_dim / 2;
    std::vector<double> frequencies(static_cast<size_t>(half));
    for (int i = 0; i < half; ++i)
        frequencies[static_cast<size_t>(i)] = std::pow(static_cast<double>(theta), -2.0 * i / head_dim);
    std::vector<float> table(static_cast<size_t>(positions * head_dim));
    for (int64_t p = 0; p < positions; ++p) {
        float* row = table.data() + p * head_dim;
        for (int i = 0; i < half; ++i) {
            const double angle = static_cast<double>(p) * frequencies[static_cast<size_t>(i)];
            row[i] = static_cast<float>(std::cos(angle));
            row[half + i] = static_cast<float>(std::sin(angle));
        }
    }
    return table;
}

RopeTableCache::Table RopeTableCache::get(float theta, int head_dim, int64_t positions) {
    const bool same = theta == theta_ && head_dim == head_dim_;
    if (same && positions <= rows_) return {values_, false};
    rows_ = same ? std::max(positions, 2 * rows_) : positions;
    theta_ = theta;
    head_dim_ = head_dim;
    values_ = rope_table(theta, head_dim, rows_);
    return {values_, true};
}

}  // namespace mixgpt
