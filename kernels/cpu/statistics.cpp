// tensor_statistics and exponent_histogram (kernels/ops.def): chunks of fixed size reduced in
// parallel, then combined in chunk order, so the result does not depend on the thread count.
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/float_io.h"
#include "kernels/cpu/tensor_checks.h"

namespace mixgpt::cpu {
namespace {

constexpr int64_t kChunk = int64_t{1} << 16;

void add_element(TensorStatistics& s, double value, double small) {
    if (!std::isfinite(value)) {
        s.non_finite += 1;
        return;
    }
    const double magnitude = std::fabs(value);
    s.sum_squares += value * value;
    if (magnitude > s.amax) s.amax = magnitude;
    if (magnitude < small) s.small += 1;
}

// x's bin of kernels/ops.h's exponent bins: a normal number's from its exponent field, a
// subnormal's by ilogb (floor(log2|x|) of its leading bit).
int exponent_bin(float x) {
    uint32_t bits = 0;
    std::memcpy(&bits, &x, sizeof bits);
    const uint32_t field = (bits >> 23) & 0xffu;
    if (field == 0xffu) return kExponentBins - 1;
    if ((bits & 0x7fffffffu) == 0) return 0;
    const int exponent = field != 0 ? static_cast<int>(field) - 127 : std::ilogb(x);
    return 1 + exponent - kHistogramExponentMin;
}

}  // namespace

void CpuBackend::tensor_statistics(TensorStatistics* statistics, TensorView x, TensorView reference, float small) {
    const char* op = "tensor_statistics";
    require(statistics != nullptr, op, "statistics is missing (null)");
    require(x.valid() || x.numel() == 0, op, "x is missing");
    const int64_t n = x.numel();
    if (reference.valid()) {
        require(x.dtype == DType::f32 && reference.dtype == DType::f32 && reference.numel() == n, op,
                "an update needs x and reference f32 of the same element count");
    }
    const FloatInput values(scratch_, TensorView(x.data, x.dtype, {n}));
    const float* value = values.data();
    const float* before = reference.valid() ? reference.as<const float>() : nullptr;
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    std::vector<TensorStatistics> partials(static_cast<size_t>(chunks));
#pragma omp parallel for schedule(static)
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        TensorStatistics& part = partials[static_cast<size_t>(chunk)];
        const int64_t end = std::min(n, (chunk + 1) * kChunk);
        for (int64_t i = chunk * kChunk; i < end; ++i)
            add_element(part, before != nullptr ? static_cast<double>(value[i]) - before[i] : value[i], small);
    }
    TensorStatistics total;
    for (const TensorStatistics& part : partials) {
        total.sum_squares += part.sum_squares;
        total.amax = std::max(total.amax, part.amax);
        total.small += part.small;
        total.non_finite += part.non_finite;
    }
    *statistics = total;
}

void CpuBackend::exponent_histogram(uint64_t* counts, TensorView x) {
    const char* op = "exponent_histogram";
    require(counts != nullptr, op, "counts is missing (null)");
    require(x.valid() || x.numel() == 0, op, "x is missing");
    const int64_t n = x.numel();
    const FloatInput values(scratch_, TensorView(x.data, x.dtype, {n}));
    const float* value = values.data();
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    std::vector<uint64_t> partials(static_cast<size_t>(chunks * kExponentBins), 0);
#pragma omp parallel for schedule(static)
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        uint64_t* part = &partials[static_cast<size_t>(chunk * kExponentBins)];
        const int64_t end = std::min(n, (chunk + 1) * kChunk);
        for (int64_t i = chunk * kChunk; i < end; ++i) ++part[exponent_bin(value[i])];
    }
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
        for (int bin = 0; bin < kExponentBins; ++bin) counts[bin] += partials[static_cast<size_t>(chunk * kExponentBins + bin)];
}

}  // namespace mixgpt::cpu
