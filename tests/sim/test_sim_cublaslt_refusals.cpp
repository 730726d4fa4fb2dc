// The simulated cuBLASLt's refusals on request (tests/cuda_sim/cublaslt_refusals.h): each of the
// three ways cublasLt.h lets the heuristic say it has nothing, as the caller sees it; the text
// rules of MIXGPT_CUDA_SIM_CUBLASLT_REFUSE, and what they refuse to parse; a refusal ends with its
// scope. What mixgpt does about a refusal is in test_sim_matmul_fallbacks.cpp and
// test_sim_fp8_fallbacks.cpp.
#include <cublasLt.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "core/cuda_check.h"
#include "kernels/cuda/cublaslt_matmul.h"
#include "kernels/cuda/device_memory.h"
#include "tests/cuda_sim/cublaslt_refusals.h"

namespace mixgpt {
namespace {

using cuda_sim::CublasLtRefusal;
using cuda_sim::HeuristicQuery;
using cuda_sim::RefusalForm;

struct HeuristicAnswer {
    cublasStatus_t status;
    int found;
    cublasStatus_t state;  // of the first result, when found
};

// The heuristic asked directly for D (16,16) bf16 = A (16,16) · B (16,16), bf16 operands.
HeuristicAnswer ask_heuristic() {
    cublasLtHandle_t handle = nullptr;
    cublasLtMatmulDesc_t operation = nullptr;
    cublasLtMatrixLayout_t layout = nullptr;
    cublasLtMatmulPreference_t preference = nullptr;
    CUBLAS_CHECK(cublasLtCreate(&handle));
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&operation, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, CUDA_R_16BF, 16, 16, 16));
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
    cublasLtMatmulHeuristicResult_t result{};
    result.state = CUBLAS_STATUS_SUCCESS;
    HeuristicAnswer answer{};
    answer.status = cublasLtMatmulAlgoGetHeuristic(handle, operation, layout, layout, layout, layout,
                                                   preference, 1, &result, &answer.found);
    answer.state = result.state;
    cublasLtMatmulPreferenceDestroy(preference);
    cublasLtMatrixLayoutDestroy(layout);
    cublasLtMatmulDescDestroy(operation);
    cublasLtDestroy(handle);
    return answer;
}

TEST(SimCublasLtRefusals, EachFormIsWhatTheHeuristicAnswers) {
    const auto all = [](const HeuristicQuery&) { return true; };
    HeuristicAnswer answer = ask_heuristic();
    EXPECT_EQ(answer.status, CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(answer.found, 1);
    {
        const CublasLtRefusal refusal(all, RefusalForm::not_supported);
        answer = ask_heuristic();
        EXPECT_EQ(answer.status, CUBLAS_STATUS_NOT_SUPPORTED);
        EXPECT_EQ(answer.found, 0);
    }
    {
        const CublasLtRefusal refusal(all, RefusalForm::none_found);
        answer = ask_heuristic();
        EXPECT_EQ(answer.status, CUBLAS_STATUS_SUCCESS);
        EXPECT_EQ(answer.found, 0);
    }
    {
        const CublasLtRefusal refusal(all, RefusalForm::failed_result);
        answer = ask_heuristic();
        EXPECT_EQ(answer.status, CUBLAS_STATUS_SUCCESS);
        EXPECT_EQ(answer.found, 1);
        EXPECT_EQ(answer.state, CUBLAS_STATUS_NOT_SUPPORTED);
    }
    answer = ask_heuristic();
    EXPECT_EQ(answer.status, CUBLAS_STATUS_SUCCESS) << "the refusal outlived its scope";
    EXPECT_EQ(answer.found, 1);
}

// LtMatmulRunner::try_run sees every form as "no algorithm", and only for the products refused.
TEST(SimCublasLtRefusals, TheRunnerTakesEveryFormForNoAlgorithm) {
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    {
        cuda::DeviceAllocator allocator(stream);
        const Buffer memory = allocator.allocate(3 * 16 * 16 * sizeof(float));
        const auto product = [&](cudaDataType type, int64_t m) {
            cuda::LtProduct p;
            p.a = memory.data();
            p.b = static_cast<char*>(memory.data()) + 1024;
            p.d = static_cast<char*>(memory.data()) + 2048;
            p.lda = p.ldb = p.ldd = 16;
            p.m = m;
            p.n = p.k = 16;
            p.input_type = p.output_type = type;
            return p;
        };
        for (const RefusalForm form :
             {RefusalForm::not_supported, RefusalForm::none_found, RefusalForm::failed_result}) {
            SCOPED_TRACE(static_cast<int>(form));
            const CublasLtRefusal refusal([](const HeuristicQuery& q) { return q.a_type == CUDA_R_16BF; },
                                          form);
            cuda::LtMatmulRunner runner(allocator, stream);
            EXPECT_FALSE(runner.try_run(product(CUDA_R_16BF, 16)));
            EXPECT_TRUE(runner.try_run(product(CUDA_R_16F, 16)));
        }
        CUDA_CHECK(cudaStreamSynchronize(stream));
    }
    CUDA_CHECK(cudaStreamDestroy(stream));
}

HeuristicQuery query(cudaDataType a, cudaDataType b, cudaDataType d, bool bias) {
    return {a, b, d, CUBLAS_COMPUTE_32F, bias, true, false, 64, 48, 32, 32, 32, 64};
}

TEST(SimCublasLtRefusals, TextRulesRefuseWhatTheySay) {
    const cuda_sim::RefusalText refuses =
        cuda_sim::parse_refusal_rules("fp8,bias;a=bf16,d=f32,form=none_found;m<16;ld%16,op=NT");
    EXPECT_EQ(refuses(query(CUDA_R_8F_E4M3, CUDA_R_8F_E5M2, CUDA_R_16BF, true)), RefusalForm::not_supported);
    EXPECT_EQ(refuses(query(CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF, false)), std::nullopt);
    EXPECT_EQ(refuses(query(CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F, false)), RefusalForm::none_found);
    EXPECT_EQ(refuses(query(CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, true)), std::nullopt);
    HeuristicQuery small = query(CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, false);
    EXPECT_EQ(refuses(small), std::nullopt);
    small.m = 15;
    EXPECT_EQ(refuses(small), RefusalForm::not_supported);
    HeuristicQuery odd = query(CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, false);
    odd.ldb = 40;
    EXPECT_EQ(refuses(odd), std::nullopt) << "op=NT holds back the rule (the query is TN)";
    odd.transpose_a = false;
    odd.transpose_b = true;
    EXPECT_EQ(refuses(odd), RefusalForm::not_supported);
    odd.ldb = 48;
    EXPECT_EQ(refuses(odd), std::nullopt);
    HeuristicQuery tf32 = query(CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, false);
    tf32.compute = CUBLAS_COMPUTE_32F_FAST_TF32;
    EXPECT_EQ(cuda_sim::parse_refusal_rules("tf32,nobias,k<33,n<49,b=f32")(tf32), RefusalForm::not_supported);
    EXPECT_EQ(cuda_sim::parse_refusal_rules("all,form=failed_result")(tf32), RefusalForm::failed_result);
}

TEST(SimCublasLtRefusals, TextThatSaysNothingClearIsRefused) {
    const auto expect_refused = [](const std::string& text, const std::string& named) {
        try {
            cuda_sim::parse_refusal_rules(text);
            ADD_FAILURE() << "accepted '" << text << "'";
        } catch (const std::invalid_argument& error) {
            EXPECT_NE(std::string(error.what()).find(named), std::string::npos) << error.what();
        }
    };
    expect_refused("a=int8", "unknown type 'int8'");
    expect_refused("bias,m<x", "'m<x' needs a positive number");
    expect_refused("m<0", "'m<0' needs a positive number");
    expect_refused("fp8;biased", "unknown condition 'biased'");
    expect_refused("op=TX", "op= takes two letters");
    expect_refused("bias,,fp8", "an empty condition");
    expect_refused("form=none_found", "has no condition");
    expect_refused("all,form=never", "unknown form 'never'");
}

}  // namespace
}  // namespace mixgpt
