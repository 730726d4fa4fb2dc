// `mixgpt bench`'s arithmetic: model FLOPs per token from the parameter layout, the peak table
// by device name, and MFU from a run on the CPU backend.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.h"
#include "model/parameters.h"
#include "train/benchmark.h"
#include "train/flops.h"

namespace mixgpt {
namespace {

TEST(TrainBenchTest, FlopsPerTokenCountEveryRealParameter) {
    const GPTConfig config = GPTConfig::preset("d12", 50257, 1024);
    // N counted from the layout: every tensor, less wte's padding rows.
    const ParameterLayout layout(config);
    double n = 0;
    for (const ParameterView& view : layout.views()) n += static_cast<double>(view.numel);
    n -= static_cast<double>(config.padded_vocab_size() - config.vocab_size) * config.n_embd;
    EXPECT_DOUBLE_EQ(training_flops_per_token(config, 1024), 6 * n + 6.0 * 12 * 1024 * 768);
    EXPECT_NEAR(n / 1e6, 124.4, 0.1);  // GPT-2 small
}

TEST(TrainBenchTest, PeakThroughputByDeviceName) {
    EXPECT_EQ(peak_tflops("cuda:0 (NVIDIA H100 80GB HBM3)", Precision::bf16), 989);
    EXPECT_EQ(peak_tflops("cuda:0 (NVIDIA H100 80GB HBM3)", Precision::fp16), 989);
    EXPECT_EQ(peak_tflops("cuda:0 (NVIDIA H100 80GB HBM3)", Precision::tf32), 494);
    EXPECT_EQ(peak_tflops("cuda:0 (NVIDIA H200)", Precision::fp32), 67);
    EXPECT_EQ(peak_tflops("cuda:1 (NVIDIA A100-SXM4-80GB)", Precision::bf16), 312);
    EXPECT_EQ(peak_tflops("cuda:1 (NVIDIA A100-SXM4-80GB)", Precision::tf32), 156);
    EXPECT_EQ(peak_tflops("cuda:1 (NVIDIA A100-SXM4-80GB)", Precision::fp32), 19.5);
    EXPECT_EQ(peak_tflops("cpu (2 threads)", Precision::fp32), 0);
}

TEST(TrainBenchTest, RunsEachPrecisionAndReportsMfuOnlyWithAPeak) {
    BenchOptions options;
    options.model = "d2";
    options.n_embd = 32;
    options.vocab_size = 100;
    options.batch_size = 2;
    options.seq_len = 16;
    options.precisions = {Precision::fp32, Precision::bf16};
    options.warmup_steps = 1;
    options.steps = 2;
    options.threads = 1;
    std::vector<BenchResult> results = run_benchmark(options);
    ASSERT_EQ(results.size(), 2u);
    EXPECT_FALSE(results[0].emulated);
    EXPECT_TRUE(results[1].emulated);
    for (const BenchResult& r : results) {
        EXPECT_GT(r.tokens_per_second, 0);
        EXPECT_NEAR(r.ms_per_step, 2 * 16 * 1e3 / r.tokens_per_second, 1e-9 * r.ms_per_step);
        EXPECT_TRUE(std::isnan(r.mfu));
        EXPECT_TRUE(std::isfinite(r.last_loss));
        EXPECT_GT(r.peak_memory_bytes, 0u);
    }
    EXPECT_NE(bench_table(options, results).find("emulated"), std::string::npos);

    options.peak_tflops = 0.5;
    options.precisions = {Precision::fp32};
    results = run_benchmark(options);
    EXPECT_DOUBLE_EQ(results[0].mfu, results[0].achieved_tflops / 0.5);
    const GPTConfig config = GPTConfig::preset("d2", 100, 16);
    GPTConfig narrow = config;
    narrow.n_embd = 32;
    EXPECT_DOUBLE_EQ(results[0].achieved_tflops,
                     training_flops_per_token(narrow, 16) * results[0].tokens_per_second / 1e12);
}

TEST(TrainBenchTest, GradientExchangeIsNamedAndNeedsCuda) {
    for (GradientExchange exchange :
         {GradientExchange::none, GradientExchange::overlapped, GradientExchange::after_backward})
        EXPECT_EQ(parse_gradient_exchange(gradient_exchange_name(exchange)), exchange);
    EXPECT_THROW(parse_gradient_exchange("overlap"), Error);
    BenchOptions options;
    options.exchange = GradientExchange::overlapped;
    try {
        run_benchmark(options);
        FAIL() << "no error";
    } catch (const Error& error) {
        EXPECT_NE(std::string(error.what()).find("needs --device cuda"), std::string::npos) << error.what();
    }
}

}  // namespace
}  // namespace mixgpt
