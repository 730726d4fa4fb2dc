#include "kernels/tensor_core_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

namespace mixgpt {
namespace {

constexpr int kFp32MinExponent = -126;
constexpr int kFp32FractionBits = 23;
constexpr int kMaxBlock = 64;

int bit_length(uint64_t x) { return x == 0 ? 0 : 64 - __builtin_clzll(x); }

// x · 2^shift toward zero, as an integer (shift may be negative).
uint64_t shifted(uint64_t x, int shift) {
    if (shift >= 0) return x << shift;
    return -shift >= 64 ? 0 : x >> -shift;
}

// The exponent of the leading bit of a nonzero finite double. Every value here is a normal double:
// the inputs have at most 24 significant bits and lie above 2^-150, so their products (exact in
// double) lie above 2^-300.
int exponent_of(double x) {
    uint64_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    return static_cast<int>((bits >> 52) & 0x7ff) - 1023;
}

// 2^e for e in [-1022, 1023].
double power_of_two(int e) {
    const uint64_t bits = static_cast<uint64_t>(e + 1023) << 52;
    double x;
    std::memcpy(&x, &bits, sizeof x);
    return x;
}

// sum · 2^grid rounded to `fraction_bits` (fp32's exponent range, subnormals included) toward zero.
float round_toward_zero(int64_t sum, int grid, int fraction_bits) {
    if (sum == 0) return 0.f;
    const uint64_t magnitude = static_cast<uint64_t>(sum < 0 ? -sum : sum);
    const int leading = grid + bit_length(magnitude) - 1;
    const int kept_grid = std::max(leading, kFp32MinExponent) - fraction_bits;
    const double value =
        kept_grid <= grid ? static_cast<double>(magnitude) * power_of_two(grid)
                          : static_cast<double>(shifted(magnitude, grid - kept_grid)) * power_of_two(kept_grid);
    const float result = value >= 0x1p128 ? std::numeric_limits<float>::infinity() : static_cast<float>(value);
    return sum < 0 ? -result : result;
}

// The exponent the hardware gives an input: its leading bit's, but at least the format's
// smallest normal exponent (a subnormal keeps that exponent with a significand below 1).
int input_exponent(double x, int min_exponent) { return std::max(exponent_of(x), min_exponent); }

float exact_step(const TensorCoreOperand* a, const TensorCoreOperand* b, size_t b_stride, int n, float c) {
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += a[i].value * b[i * b_stride].value;
    return static_cast<float>(sum + static_cast<double>(c));
}

// A zero input's exponent: a product with it sits below every real one (whose inputs' exponents
// are above -1100), and two of them still fit an int.
constexpr int kZeroExponent = std::numeric_limits<int>::min() / 4;
// Raw exponents below this come from a zero input: no product is there.
constexpr int kNoProduct = kZeroExponent / 2;

}  // namespace

TensorCoreModel tensor_core_model(int sm, TensorCoreInput input) {
    TensorCoreModel model;
    const bool hopper = sm >= 90;
    const char* device = hopper ? "h100" : "a100";
    model.extra_alignment_bits = hopper ? 2 : 1;
    switch (input) {
        case TensorCoreInput::bf16:
            model.name = std::string(device) + " bf16";
            model.block = hopper ? 16 : 8;
            break;
        case TensorCoreInput::fp16:
            model.name = std::string(device) + " fp16";
            model.block = hopper ? 16 : 8;
            model.input_min_exponent = -14;
            break;
        case TensorCoreInput::tf32:
            model.name = std::string(device) + " tf32";
            model.block = hopper ? 8 : 4;
            break;
        case TensorCoreInput::e4m3:
        case TensorCoreInput::e5m2:
            if (!hopper) throw std::invalid_argument("FP8 tensor cores need compute capability 8.9 or newer");
            model.name = input == TensorCoreInput::e4m3 ? "h100 e4m3" : "h100 e5m2";
            model.block = 32;
            model.extra_alignment_bits = -10;
            model.result_bits = 13;
            model.promotion_interval = 128;
            model.input_min_exponent = input == TensorCoreInput::e4m3 ? -6 : -14;
            break;
    }
    return model;
}

TensorCoreModel exact_tensor_core_model(TensorCoreInput input) {
    TensorCoreModel model = tensor_core_model(90, input);
    model.name = "exact";
    model.exact = true;
    model.promotion_interval = 0;
    return model;
}

TensorCoreOperand tensor_core_input(const TensorCoreModel& model, double value) {
    return {value, value == 0 ? kZeroExponent : input_exponent(value, model.input_min_exponent)};
}

float tensor_core_step(const TensorCoreModel& model, const TensorCoreOperand* a, const TensorCoreOperand* b,
                       size_t b_stride, int n, float c) {
    if (n > kMaxBlock) throw std::invalid_argument("a tensor-core step adds at most 64 products");
    if (model.exact) return exact_step(a, b, b_stride, n, c);
    // The products, exact in double (NaN or infinite only from such inputs: then the IEEE sum).
    // `raw` is the sum of the inputs' exponents, which the hardware aligns by; the product's own
    // leading bit (`leading`) may sit one above it. The first pass depends on earlier products
    // only through the maxima (the simulator runs it for every product of every mma.sync); the
    // second finds the extra bit: whether a product at the largest raw exponent has a
    // significand >= 2.
    double products[kMaxBlock];
    int raws[kMaxBlock], leadings[kMaxBlock];
    double magnitude_sum = std::fabs(static_cast<double>(c));
    int largest = kZeroExponent, largest_raw = 2 * kZeroExponent;
    for (int i = 0; i < n; ++i) {
        const TensorCoreOperand x = a[i], y = b[i * b_stride];
        const double product = x.value * y.value;
        products[i] = product;
        magnitude_sum += std::fabs(product);
        leadings[i] = exponent_of(product);  // -1023 for a zero product: never the largest
        raws[i] = x.exponent + y.exponent;
        largest = std::max(largest, leadings[i]);
        largest_raw = std::max(largest_raw, raws[i]);
    }
    int carries = 0;
    for (int i = 0; i < n; ++i) carries |= (raws[i] == largest_raw) & (leadings[i] > raws[i]);
    bool carry = carries != 0;
    if (!std::isfinite(magnitude_sum)) return exact_step(a, b, b_stride, n, c);
    if (c != 0) {
        carry = carry && largest_raw >= exponent_of(c);
        // A subnormal c is aligned as fp32's smallest normal exponent.
        largest = std::max(largest, std::max(exponent_of(c), kFp32MinExponent));
    } else if (largest_raw < kNoProduct) {
        return 0.f;  // no nonzero product and no c
    }
    const int kept_bits = kFp32FractionBits + model.extra_alignment_bits + (model.carry_bit && carry ? 1 : 0);
    const int grid = largest - kept_bits;
    // Each term in units of 2^grid, truncated toward zero: below 2^(kept_bits + 1), so exact as
    // an integer, and so is their sum.
    const double to_grid = power_of_two(-grid);
    int64_t sum = static_cast<int64_t>(static_cast<double>(c) * to_grid);
    for (int i = 0; i < n; ++i) sum += static_cast<int64_t>(products[i] * to_grid);
    return round_toward_zero(sum, grid, model.result_bits);
}

float tensor_core_dot(const TensorCoreModel& model, const TensorCoreOperand* a, const TensorCoreOperand* b,
                      size_t b_stride, uint64_t k, float c) {
    const auto chain = [&](uint64_t first, uint64_t last, float start) {
        float accumulator = start;
        for (uint64_t l = first; l < last; l += static_cast<uint64_t>(model.block)) {
            const int n = static_cast<int>(std::min<uint64_t>(last - l, static_cast<uint64_t>(model.block)));
            accumulator = tensor_core_step(model, a + l, b + l * b_stride, b_stride, n, accumulator);
        }
        return accumulator;
    };
    if (model.promotion_interval == 0) return chain(0, k, c);
    float promoted = c;
    for (uint64_t first = 0; first < k; first += static_cast<uint64_t>(model.promotion_interval))
        promoted += chain(first, std::min<uint64_t>(k, first + static_cast<uint64_t>(model.promotion_interval)), 0.f);
    return promoted;
}

float tensor_core_dot(const TensorCoreModel& model, const double* a, const double* b, size_t b_stride, uint64_t k,
                      float c) {
    std::vector<TensorCoreOperand> a_inputs(k), b_inputs(k);
    for (uint64_t l = 0; l < k; ++l) {
        a_inputs[l] = tensor_core_input(model, a[l]);
        b_inputs[l] = tensor_core_input(model, b[l * b_stride]);
    }
    return tensor_core_dot(model, a_inputs.data(), b_inputs.data(), 1, k, c);
}

float truncate_to_tf32(float value) {
    if (!std::isfinite(value)) return value;
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    bits &= ~uint32_t{0x1fff};
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

}  // namespace mixgpt
