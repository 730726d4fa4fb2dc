// Dot products that tell the tensor-core models' features apart (kernels/tensor_core_model.h),
// with what each model gives, worked out by hand from the features the model states (not by
// running it): tests/test_tensor_core_model.cpp checks the model against these values, and the
// lease's probe (tensor_core_probe.h) runs the same vectors on the GPU. Every value is exact in
// bf16 and fp16 (2^-15 as an fp16 subnormal).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <utility>
#include <vector>

namespace mixgpt::lab {

struct DistinguishingVector {
    const char* feature;
    std::vector<double> a, b;  // up to 16 products, in k order
    float c;
    float a100, h100, exact;  // c + a · b in the A100 and H100 models, and summed exactly
};

// `size` zeros but for the (k, value) entries.
inline std::vector<double> zeros_with(size_t size, std::initializer_list<std::pair<size_t, double>> entries) {
    std::vector<double> v(size, 0.0);
    for (const auto& [k, value] : entries) v[k] = value;
    return v;
}

inline const std::vector<DistinguishingVector>& distinguishing_vectors() {
    static const std::vector<DistinguishingVector> vectors{
        // 1 - 2^-25: the A100 keeps 23 + 1 bits below the leading one, so -2^-25 is cut away (1);
        // the H100 keeps 23 + 2, adds it, and 1 - 2^-25 truncates to fp32's 1 - 2^-24 (below 1
        // fp32's spacing is 2^-24). Exact and rounded to nearest, it is a tie that goes to the
        // even 1.
        {"extra alignment bits: 1 - 2^-25", {1.0, -0x1p-13}, {1.0, 0x1p-12}, 0.f, 1.f, 1.f - 0x1p-24f, 1.f},
        // -2^-26 lies below the H100's bits too.
        {"extra alignment bits: 1 - 2^-26", {1.0, -0x1p-13}, {1.0, 0x1p-13}, 0.f, 1.f, 1.f, 1.f},
        // -2^-24 lies within the A100's.
        {"extra alignment bits: 1 - 2^-24", {1.0, -0x1p-13}, {1.0, 0x1p-11}, 0.f, 1.f - 0x1p-24f, 1.f - 0x1p-24f,
         1.f - 0x1p-24f},
        // The accumulator is aligned as a product is: c = 1 with the product -2^-25 as above.
        {"accumulator aligned: 1 - 2^-25", {-0x1p-13}, {0x1p-12}, 1.f, 1.f, 1.f - 0x1p-24f, 1.f},
        // 1 + 3 * 2^-24 lies on both alignment grids; the sum is truncated to fp32 (1 + 2^-23)
        // where rounding to nearest gives the even 1 + 2^-22.
        {"final rounding toward zero", {1.0, 0x1.8p-11}, {1.0, 0x1p-12}, 0.f, 1.f + 0x1p-23f, 1.f + 0x1p-23f,
         1.f + 0x1p-22f},
        {"final rounding toward zero, negative", {-1.0, -0x1.8p-11}, {1.0, 0x1p-12}, 0.f, -1.f - 0x1p-23f,
         -1.f - 0x1p-23f, -1.f - 0x1p-22f},
        // 1.5 * 1.5 = 2.25 has a significand of 2 or more at its inputs' exponent 0, so one more
        // bit is kept: the grid is 2^(1 - 23 - 2 - 1) = 2^-25 on the H100, where -2^-25 counts
        // (2.25 - 2^-25, truncated to fp32's 2^-22 spacing above 2: 2.25 - 2^-22), and 2^-24 on
        // the A100, where it does not. Without the bit the H100 would give 2.25.
        {"carry bit of a leading product", {1.5, -0x1p-12}, {1.5, 0x1p-13}, 0.f, 2.25f, 2.25f - 0x1p-22f, 2.25f},
        // A larger c takes the bit away: c = 4 aligns at 2^(2 - 25) on the H100, cutting -2^-25.
        {"carry bit under a larger c", {1.5, -0x1p-12}, {1.5, 0x1p-13}, 4.f, 6.25f, 6.25f, 6.25f},
        // 1 - 1 at k = 0, 1 and 2^-30 at k = 8: the H100 adds all 16 in one step aligned to 1,
        // cutting 2^-30 (0); the A100's second step of 8 starts from the first's exact 0 and keeps
        // 2^-30 whole, as exact sums do.
        {"steps of 8 or 16 products", zeros_with(16, {{0, 1.0}, {1, -1.0}, {8, 0x1p-15}}),
         zeros_with(16, {{0, 1.0}, {1, 1.0}, {8, 0x1p-15}}), 0.f, 0x1p-30f, 0.f, 0x1p-30f},
        {"cancellation to zero", {1.0, -1.0}, {1.5, 1.5}, 0.f, 0.f, 0.f, 0.f},
        // A lone product keeps all its bits: (1 + 2^-7)^2 2^-20 = (1 + 2^-6 + 2^-14) 2^-20.
        {"one product", {0x1.02p-10}, {0x1.02p-10}, 0.f, 0x1.0404p-20f, 0x1.0404p-20f, 0x1.0404p-20f},
    };
    return vectors;
}

}  // namespace mixgpt::lab
