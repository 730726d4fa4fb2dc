// `mixgpt bench`'s arithmetic: model FLOPs per token from the parameter layout, the peak table
// by device name, and MFU from a run on the CPU backend.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "core/error.h"
#include "model/parameters.h"
#include "study/benchmark.h"
#include "model/flops.h"

namespace mixgpt {
namespace {

TEST(TrainBenchTest, FlopsPerTokenCountEveryRealParameter) {
    const GPTConfig config = GPTConfig::preset("d12", 50257, 1024);
    // N counted from the layout: every tensor, less wte's padding rows.
    const ParameterLayout layout(config);
    double n = 0;
    for (const ParameterView& view : layout.views()) n += static_cast<double>(view.numel);
    n -= static_cast<double>(config.padded_vocab_size() - config.vocab_size) * config.n_embd;
    EXPECT_NEAR(n / 1e6, 124.4, 0.1);  // GPT-2 small
    // The products count the weights a token is multiplied by: per block 12 C^2 (qkv 3C^2, output
    // C^2, MLP 8C^2), and the tied head V C; not wpe, biases or norms.
    const double C = 768, V = 50257;
    const double gpt2_products = 12 * 12 * C * C + V * C;
    EXPECT_DOUBLE_EQ(training_flops_per_token(config, 1024), 6 * gpt2_products + 6.0 * 12 * 1024 * C);
    EXPECT_LT(6 * n - 6 * gpt2_products, 0.01 * 6 * n);

    // Llama-style with 4 of 12 heads for k and v, SwiGLU F = 2048, an untied head: qkv (12 + 8) hd C
    // = 5/3 C^2, output C^2, gate, up and down 3 F C, and the head V C (the input embedding is a lookup).
    GPTConfig llama = GPTConfig::preset("d12", 50257, 1024, Arch::llama);
    llama.n_kv_head = 4;
    llama.ffn_hidden = 2048;
    llama.tie_embeddings = false;
    const double llama_products = 12 * (5.0 / 3 * C * C + C * C + 3 * 2048 * C) + V * C;
    EXPECT_DOUBLE_EQ(training_flops_per_token(llama, 1024), 6 * llama_products + 6.0 * 12 * 1024 * C);
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

// d2 narrowed to width 32, vocabulary 100, B=2, T=16: one warm-up and two timed steps on one thread.
BenchOptions tiny_bench_options(std::vector<Precision> precisions) {
    BenchOptions options;
    options.model.preset = "d2";
    options.model.n_embd = 32;
    options.vocab_size = 100;
    options.batch_size = 2;
    options.seq_len = 16;
    options.precisions = std::move(precisions);
    options.warmup_steps = 1;
    options.steps = 2;
    options.threads = 1;
    return options;
}

TEST(TrainBenchTest, RunsEachPrecisionAndReportsMfuOnlyWithAPeak) {
    BenchOptions options = tiny_bench_options({Precision::fp32, Precision::bf16});
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

// --profile: every op of a step is counted as the model calls it (d2: two blocks of four matrix
// products, two LayerNorm backwards each plus the final one, one classifier and one AdamW step), and
// the ops' times add up to no more than the step.
TEST(TrainBenchTest, ProfileCountsEachOpOfAStep) {
    BenchOptions options;
    options.model.preset = "d2";
    options.model.n_embd = 32;       // C; the block's weights are (3C, C), (C, C), (4C, C) and (C, 4C)
    options.vocab_size = 300;  // padded to 384 rows: the output projection's label differs from the block's
    options.batch_size = 2;
    options.seq_len = 16;
    options.precisions = {Precision::bf16};
    options.warmup_steps = 1;
    options.steps = 2;
    options.threads = 1;
    EXPECT_TRUE(run_benchmark(options)[0].profile.empty());
    options.profile = true;
    const BenchResult result = run_benchmark(options)[0];
    std::map<std::string, double> calls;
    double milliseconds = 0;
    for (const OpTime& time : result.profile) {
        calls[time.op] = static_cast<double>(time.calls) / options.steps;
        milliseconds += time.seconds * 1e3 / options.steps;
    }
    const std::map<std::string, double> expected = {{"matmul_forward 96x32", 2},
                                                    {"matmul_forward 32x32", 2},
                                                    {"matmul_forward 128x32", 2},
                                                    {"matmul_forward 32x128", 2},
                                                    {"matmul_forward 384x32", 1},
                                                    {"matmul_backward_weight 96x32", 2},
                                                    {"matmul_backward_input 384x32", 1},
                                                    {"layernorm_backward", 5},
                                                    {"attention_forward", 2},
                                                    {"attention_backward", 2},
                                                    {"classifier", 1},
                                                    {"adamw_step", 1},
                                                    {"embedding_forward", 1},
                                                    {"embedding_backward", 1}};
    for (const auto& [op, count] : expected) EXPECT_EQ(calls[op], count) << op;
    EXPECT_GT(milliseconds, 0);
    EXPECT_LE(milliseconds, result.ms_per_step * (1 + 1e-9));
    const std::string table = bench_table(options, {result});
    EXPECT_NE(table.find("where a bf16 step goes"), std::string::npos) << table;
    EXPECT_NE(table.find("outside the ops"), std::string::npos) << table;
}

// --optimizer muon: the timed steps run Muon's ops on the hidden matrices beside AdamW on the rest,
// and the table and JSON name the optimizer; AdamW's steps run none of them.
TEST(TrainBenchTest, MuonStepsRunMuonsOpsAndAreNamed) {
    BenchOptions options = tiny_bench_options({Precision::bf16});
    options.profile = true;
    for (OptimizerKind optimizer : {OptimizerKind::adamw, OptimizerKind::muon}) {
        SCOPED_TRACE(optimizer_name(optimizer));
        options.optimizer = optimizer;
        const BenchResult result = run_benchmark(options)[0];
        std::map<std::string, double> calls;
        for (const OpTime& time : result.profile) calls[time.op] = static_cast<double>(time.calls) / options.steps;
        const bool muon = optimizer == OptimizerKind::muon;
        EXPECT_EQ(calls["muon_momentum"] > 0, muon);
        EXPECT_EQ(calls["muon_newton_schulz"] > 0, muon);
        EXPECT_EQ(calls["muon_update"] > 0, muon);
        EXPECT_GE(calls["adamw_step"], 1);
        EXPECT_TRUE(std::isfinite(result.last_loss));
        EXPECT_NE(bench_table(options, {result}).find(std::string(", ") + optimizer_name(optimizer) + ", "),
                  std::string::npos);
        EXPECT_NE(bench_json(options, {result}).find(std::string("\"optimizer\": \"") + optimizer_name(optimizer)),
                  std::string::npos);
    }
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
