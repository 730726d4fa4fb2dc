// How the kernel lab validates a kernel before timing it, and the host copies it needs.
//
// The reference is the CPU backend in fp32 on the same stored inputs (a stand-in for
// float64: its own error is far below that of bf16/fp16 storage). A GPU result passes when
//   ||gpu - ref|| / ||ref|| <= 2 ||cpu - ref|| / ||ref||,
// cpu the CPU backend's run in the GPU's precision; a result stored in fp32 may instead meet
// the FP32 criterion 1e-5. In an fp32 run (cpu = ref) the FP32 criterion applies.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "kernels/ops.h"

namespace mixgpt::lab {

struct Check {
    std::string what;
    double error = 0;  // of the GPU result against the reference
    double bound = 0;
    bool passed() const { return error <= bound; }
};

double relative_error(const std::vector<float>& values, const std::vector<float>& reference);

Check judge(const std::string& what, const std::vector<float>& gpu, const std::vector<float>& cpu,
            const std::vector<float>& reference, DType storage);

// "ok (worst: dq at 0.71 of its bound)" or "FAILED: dq 3.1e-03 > 1.2e-03, ...".
std::string summarize(const std::vector<Check>& checks);
bool all_passed(const std::vector<Check>& checks);

// A tensor's values read back as floats (one copy to the host).
std::vector<float> read_floats(Backend& backend, const TensorView& view);
// Stores `values` into a tensor (rounded to its dtype).
void write_floats(Backend& backend, const TensorView& view, const std::vector<float>& values);
// `values` as a tensor of `dtype` would hold them.
std::vector<float> rounded(const std::vector<float>& values, DType dtype);

}  // namespace mixgpt::lab
