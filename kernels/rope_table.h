// The cos and sin of the rotary position embedding's angles (AttentionParams::rope_theta,
// kernels/ops.h), which both backends read from a table rather than compute per element: row p
// holds cos(p · theta^(-2i/hd)) for i in [0, hd/2), then the sin of the same angles, each computed
// in double and rounded to float. (A float angle p · theta^(-2i/hd) is already off by up to half
// an ulp of p, 1.2e-4 rad at p = 2048: the RoPE'd values' error would grow with the position.)
#pragma once

#include <cstdint>
#include <vector>

namespace mixgpt {

// (positions, head_dim) floats: [cos | sin] per position, as above. head_dim even and > 0.
std::vector<float> rope_table(float theta, int head_dim, int64_t positions);

// The table of the last (theta, head_dim) asked for, kept between calls: rebuilt when theta or
// head_dim change, and grown (to at least twice its rows) when more positions are asked for.
class RopeTableCache {
public:
    struct Table {
        const std::vector<float>& values;  // (rows, head_dim)
        bool rebuilt;                      // built by this call (a device copy must be refreshed)
    };
    // A table of at least `positions` rows; valid until the next call.
    Table get(float theta, int head_dim, int64_t positions);

private:
    std::vector<float> values_;
    float theta_ = 0.f;
    int head_dim_ = 0;
    int64_t rows_ = 0;
};

}  // namespace mixgpt
