// `mixgpt bench` on the CUDA backend, on a small model: every precision, flash and simple
// attention, and the 1-rank gradient exchanges (overlapped, after backward) that bench/README.md's
// GPU session times. Its figures must agree with one another: ms/step with tokens/s, achieved
// TFLOP/s with the model's FLOPs, MFU with the given peak; the loss finite, peak memory counted,
// and the JSON and the table name the device. Speed itself belongs to benchmarks, not tests.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "model/config.h"
#include "tests/gpu/gpu_test_support.h"
#include "study/benchmark.h"
#include "model/flops.h"

namespace mixgpt {
namespace {

BenchOptions small_bench() {
    BenchOptions options;
    options.device = "cuda";
    options.model.preset = "d2";
    options.model.n_head = 2;
    options.model.n_embd = 128;  // head_dim 64: flash attention applies in bf16 and fp16
    options.vocab_size = 100;
    options.batch_size = 2;
    options.seq_len = 80;  // a partial flash tile
    options.warmup_steps = 1;
    options.steps = 2;
    options.peak_tflops = 100;
    return options;
}

void expect_consistent(const BenchOptions& options, const BenchResult& r, const std::string& what) {
    SCOPED_TRACE(what);
    const GPTConfig config = model_config(options.model, options.vocab_size, options.seq_len);
    const double tokens_per_step = static_cast<double>(options.batch_size) * options.seq_len;
    EXPECT_FALSE(r.emulated);
    EXPECT_GT(r.tokens_per_second, 0);
    EXPECT_NEAR(r.ms_per_step, tokens_per_step * 1e3 / r.tokens_per_second, 1e-9 * r.ms_per_step);
    EXPECT_NEAR(r.achieved_tflops,
                training_flops_per_token(config, options.seq_len) * r.tokens_per_second / 1e12,
                1e-9 * r.achieved_tflops);
    EXPECT_EQ(r.peak_tflops, options.peak_tflops);
    EXPECT_NEAR(r.mfu, r.achieved_tflops / options.peak_tflops, 1e-12);
    EXPECT_TRUE(std::isfinite(r.last_loss));
    EXPECT_GT(r.last_loss, 0);
    EXPECT_GT(r.peak_memory_bytes, 0u);
    EXPECT_NE(r.device_name.find("cuda:0"), std::string::npos) << r.device_name;
}

TEST(GpuBench, EveryPrecisionGivesConsistentFigures) {
    MIXGPT_GPU_OR_SKIP();
    const BenchOptions options = small_bench();
    const std::vector<BenchResult> results = run_benchmark(options);
    ASSERT_EQ(results.size(), options.precisions.size());
    for (size_t i = 0; i < results.size(); ++i) {
        EXPECT_EQ(results[i].precision, options.precisions[i]);
        expect_consistent(options, results[i], precision_name(results[i].precision));
    }
    const std::string table = bench_table(options, results), json = bench_json(options, results);
    EXPECT_NE(table.find(results[0].device_name), std::string::npos) << table;
    EXPECT_NE(json.find("tokens_per_second"), std::string::npos) << json;
}

TEST(GpuBench, GradientExchangesAndSimpleAttentionRun) {
    MIXGPT_GPU_OR_SKIP();
    BenchOptions options = small_bench();
    options.precisions = {Precision::bf16};
    for (const GradientExchange exchange : {GradientExchange::overlapped, GradientExchange::after_backward}) {
        options.exchange = exchange;
        options.bucket_mb = 0.05;  // several buckets
        const std::vector<BenchResult> results = run_benchmark(options);
        ASSERT_EQ(results.size(), 1u);
        expect_consistent(options, results[0], gradient_exchange_name(exchange));
    }
    options.exchange = GradientExchange::none;
    options.flash_attention = false;
    const std::vector<BenchResult> simple = run_benchmark(options);
    ASSERT_EQ(simple.size(), 1u);
    expect_consistent(options, simple[0], "simple attention");
}

}  // namespace
}  // namespace mixgpt
