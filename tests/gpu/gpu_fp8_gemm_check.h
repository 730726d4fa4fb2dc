// The check of one FP8 product through cuBLASLt (kernels/cuda/cublaslt_matmul.h: run_fp8_gemm)
// against the CPU's (kernels/cpu/fp8_matmul.h), shared by test_gpu_fp8_gemm.cpp and, with the
// simulated cuBLASLt refusing some products, tests/sim/test_sim_fp8_fallbacks.cpp. CUDA builds only.
//
// Tolerance: both sides multiply the same FP8 values (the quantization is bit for bit the CPU's,
// tested in test_gpu_fp8_cast.cpp), so FP8's own error is not part of the comparison; what differs
// is how the sums are formed. The CPU adds one product at a time in fp32; Hopper's FP8 tensor cores
// keep 13 fraction bits between cuBLASLt's promotions into fp32 (kernels/tensor_core_model.h), an
// error of about 2^-13 relative that an fp32 output shows (1e-4 against the CPU's 1e-7: the rule
// failed on it once the simulator modelled the tensor cores) and bf16 and fp16 outputs round away.
// So the yardstick is the larger of the CPU's error and that of the modelled hardware's product of
// the same values, what FP8 achieves on either (GUIDE.md 2.7): against the float64 product, the
// GPU's relative error is at most twice it; fp32 outputs may instead meet 1e-5.
#pragma once

#ifdef MIXGPT_WITH_CUDA
#include <cstdint>
#include <ostream>
#include <vector>

#include "core/dtype.h"
#include "core/fp8.h"
#include "tests/gpu/gpu_fp8_support.h"

namespace mixgpt::gpu_test {

struct GemmCase {
    const char* name;
    Fp8Format a_format, b_format;
    DType out_dtype;
    bool bias, accumulate;
    int64_t M, N, K;
};

inline void PrintTo(const GemmCase& gemm_case, std::ostream* out) { *out << gemm_case.name; }

// One case of each output type, with and without bias and accumulation, both formats in each place.
const std::vector<GemmCase>& fp8_gemm_cases();

std::vector<double> as_doubles(const std::vector<unsigned char>& bytes, DType dtype);

// The GPU's error against float64 at most twice the yardstick's (fp32 outputs: or 1e-5): the CPU's
// error, or the larger of it and `modelled`'s, the tensor-core model's output, where given.
void expect_within_twice_the_cpus_error(const std::vector<double>& gpu, const std::vector<double>& cpu,
                                        const std::vector<double>& reference, DType out_dtype,
                                        const std::vector<double>& modelled = {});

class GpuFp8GemmCheck : public GpuFp8Test {
protected:
    // run_fp8_gemm on random codes, scales, bias and initial output of the case, against
    // cpu::fp8_matmul on the same, judged by the rule above.
    void expect_gemm_matches_the_cpu(const GemmCase& c);
};

}  // namespace mixgpt::gpu_test
#endif  // MIXGPT_WITH_CUDA
