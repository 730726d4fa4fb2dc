#include "bench/kernel_lab/lab_check.h"

#include <algorithm>
#include <cmath>

#include "core/log.h"

namespace mixgpt::lab {
namespace {

constexpr double kFp32Tolerance = 1e-5;

}  // namespace

double relative_error(const std::vector<float>& values, const std::vector<float>& reference) {
    MIXGPT_REQUIRE(values.size() == reference.size(), "kernel lab: compared results differ in size");
    double difference = 0, norm = 0;
    for (size_t i = 0; i < values.size(); ++i) {
        const double d = static_cast<double>(values[i]) - reference[i];
        difference += d * d;
        norm += static_cast<double>(reference[i]) * reference[i];
    }
    return norm > 0 ? std::sqrt(difference / norm) : std::sqrt(difference);
}

Check judge(const std::string& what, const std::vector<float>& gpu, const std::vector<float>& cpu,
            const std::vector<float>& reference, DType storage) {
    const double twice_cpu = 2 * relative_error(cpu, reference);
    const double bound = storage == DType::f32 ? std::max(twice_cpu, kFp32Tolerance) : twice_cpu;
    return {what, relative_error(gpu, reference), bound};
}

std::string summarize(const std::vector<Check>& checks) {
    std::string failures;
    const Check* worst = nullptr;
    for (const Check& check : checks) {
        if (!check.passed())
            failures += format("%s%s %.2e > %.2e", failures.empty() ? "" : ", ", check.what.c_str(),
                               check.error, check.bound);
        if (check.bound > 0 && (worst == nullptr || check.error / check.bound > worst->error / worst->bound))
            worst = &check;
    }
    if (!failures.empty()) return "FAILED: " + failures;
    if (worst == nullptr) return "ok";
    return format("ok (worst: %s at %.2f of its bound)", worst->what.c_str(), worst->error / worst->bound);
}

bool all_passed(const std::vector<Check>& checks) {
    return std::all_of(checks.begin(), checks.end(), [](const Check& check) { return check.passed(); });
}

std::vector<float> read_floats(Backend& backend, const TensorView& view) {
    std::vector<char> bytes(view.bytes());
    backend.copy_to_host(bytes.data(), view.data, bytes.size());
    std::vector<float> values(static_cast<size_t>(view.numel()));
    convert_to_float(bytes.data(), view.dtype, values.data(), values.size());
    return values;
}

void write_floats(Backend& backend, const TensorView& view, const std::vector<float>& values) {
    MIXGPT_REQUIRE(values.size() == static_cast<size_t>(view.numel()),
                   "kernel lab: value count differs from the tensor");
    std::vector<char> bytes(view.bytes());
    convert_from_float(values.data(), bytes.data(), view.dtype, values.size());
    backend.copy_to_backend(view.data, bytes.data(), bytes.size());
    backend.synchronize();
}

std::vector<float> rounded(const std::vector<float>& values, DType dtype) {
    std::vector<float> result(values.size());
    for (size_t i = 0; i < values.size(); ++i) result[i] = round_to_dtype(values[i], dtype);
    return result;
}

}  // namespace mixgpt::lab
