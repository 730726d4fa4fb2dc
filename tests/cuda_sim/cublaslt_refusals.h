// Heuristic queries the simulated cuBLASLt (cublaslt.cpp) is told to refuse, on top of those it
// refuses by cuBLASLt's documented rules. The real library may offer no algorithm for a
// combination its documentation allows (FP8 with a bias epilogue, fp32 output, a small m, odd
// leading dimensions: it depends on the version and the GPU), and mixgpt must then take a
// fallback or fail with one line (kernels/cuda/README.md, "When cuBLASLt offers nothing").
//
// Two ways in: a test holds a CublasLtRefusal while it creates its products, and a whole run
// reads MIXGPT_CUDA_SIM_CUBLASLT_REFUSE (parse_refusal_rules's syntax) once, at the first query.
// Refusals apply when the heuristic is asked; cuBLASLt users cache its answer (LtMatmulRunner
// per problem), so a refusal must be in place before the product is first planned.
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace mixgpt::cuda_sim {

// One heuristic query as cublasLtMatmulAlgoGetHeuristic sees it: cuBLASLt's column-major terms.
struct HeuristicQuery {
    cudaDataType a_type, b_type, d_type;  // C's type is D's
    cublasComputeType_t compute;
    bool bias;  // CUBLASLT_EPILOGUE_BIAS
    bool transpose_a, transpose_b;
    uint64_t m, n, k;
    int64_t lda, ldb, ldd;
};

// How the heuristic says it has nothing. cublasLt.h allows each: "CUBLAS_STATUS_NOT_SUPPORTED if
// no heuristic function available for current configuration", or success with
// returnAlgoCount results whose "state" gives each one's status.
enum class RefusalForm {
    not_supported,  // CUBLAS_STATUS_NOT_SUPPORTED, returnAlgoCount 0
    none_found,     // CUBLAS_STATUS_SUCCESS, returnAlgoCount 0
    failed_result,  // CUBLAS_STATUS_SUCCESS, one result whose state is CUBLAS_STATUS_NOT_SUPPORTED
};

using RefusalRule = std::function<bool(const HeuristicQuery&)>;
// The form in which a query is refused, or none.
using RefusalText = std::function<std::optional<RefusalForm>(const HeuristicQuery&)>;

// While it lives, queries that `rule` matches are refused in `form`, or those `text`
// (parse_refusal_rules) refuses in its forms. Refusals nest; the most recent one that refuses a
// query decides the form.
class CublasLtRefusal {
public:
    explicit CublasLtRefusal(RefusalRule rule, RefusalForm form = RefusalForm::not_supported);
    explicit CublasLtRefusal(const std::string& text);
    ~CublasLtRefusal();
    CublasLtRefusal(const CublasLtRefusal&) = delete;
    CublasLtRefusal& operator=(const CublasLtRefusal&) = delete;

private:
    uint64_t id_;
};

// A refusal from text, as MIXGPT_CUDA_SIM_CUBLASLT_REFUSE holds it: rules separated by ';', each a
// ','-separated list of conditions that must all hold:
//   all                     every query
//   a=T  b=T  d=T           A's, B's, D's type; T is f32, f16, bf16, e4m3, e5m2, or fp8 (either)
//   fp8                     A or B is FP8
//   bias  nobias            with or without the bias epilogue
//   tf32                    compute type CUBLAS_COMPUTE_32F_FAST_TF32
//   op=XY                   A's and B's transposes, N or T each ("op=TN")
//   m<V  n<V  k<V           a dimension below V
//   ld%V                    some leading dimension (lda, ldb, ldd) not a multiple of V elements
//   form=F                  the form of this rule's refusal: not_supported (the default),
//                           none_found, failed_result
// ("fp8,bias;a=bf16,d=f32,form=none_found"); the first rule that matches decides the form.
// Throws std::invalid_argument naming what it does not understand.
RefusalText parse_refusal_rules(const std::string& text);

// cublaslt.cpp's share: the form in which `query` is refused, or none.
std::optional<RefusalForm> refusal_for(const HeuristicQuery& query);

}  // namespace mixgpt::cuda_sim
