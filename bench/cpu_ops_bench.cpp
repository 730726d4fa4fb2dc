// The CPU backend's ops of Llama-style blocks beside their GPT-2 counterparts, one op per
// benchmark, fp32: RMSNorm against LayerNorm (N = 4096 rows of C = 768), SwiGLU (M = 4096, F = 2048:
// 8.4 M outputs from a 16.8 M product) against GELU (4096 x 3072: 12.6 M), and attention with 12
// query heads on 4 key/value heads and RoPE against 12 heads without (B = 8, T = 256, hd 64),
// forward and forward + backward; and attention forward + backward under the document mask against
// T (one sequence, 12 heads, hd 64; documents of 128 and 512 tokens, or none: causal), whose cost
// should follow the sum of the documents' squared lengths. Reports ms per call (wall time, median of
// 5 repetitions) and outputs per second, 2 threads (the document-mask rows: 1).
#include <benchmark/benchmark.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/memory.h"
#include "kernels/ops.h"

namespace mixgpt {
namespace {

constexpr int kRows = 4096, kWidth = 768, kHidden = 2048;
constexpr int kBatch = 8, kLength = 256, kHeads = 12, kKvHeads = 4, kHeadDim = 64;

// A tensor in host memory holding normal values of `std` around `offset`.
class Tensor {
public:
    Tensor(std::initializer_list<int64_t> shape, float std = 1.f, float offset = 0.f)
        : view_(nullptr, DType::f32, shape), buffer_(Buffer::host(view_.bytes())) {
        view_.data = buffer_.data();
        std::mt19937 generator(7);
        std::normal_distribution<float> normal(offset, std);
        float* values = view_.as<float>();
        for (int64_t i = 0; i < view_.numel(); ++i) values[i] = normal(generator);
    }
    TensorView view() const { return view_; }

private:
    TensorView view_;
    Buffer buffer_;
};

// Times `op` (one call per iteration) on a fp32 CPU backend of `threads`; `outputs` per call.
void run(benchmark::State& state, const std::function<void(Backend&)>& op, int64_t outputs, int threads = 2) {
    const std::unique_ptr<Backend> backend = make_backend({"cpu", 0, Precision::fp32, threads});
    op(*backend);  // warm-up: scratch and RoPE tables allocated
    for (auto _ : state) op(*backend);
    state.SetItemsProcessed(state.iterations() * outputs);
}

void BM_LayerNormForward(benchmark::State& state) {
    const Tensor inp({kRows, kWidth}), weight({kWidth}, 0.1f, 1.f), bias({kWidth}, 0.1f),
        out({kRows, kWidth});
    const Tensor mean({kRows}), rstd({kRows});
    run(
        state,
        [&](Backend& b) {
            b.layernorm_forward(out.view(), mean.view(), rstd.view(), inp.view(), weight.view(), bias.view());
        },
        int64_t{kRows} * kWidth);
}

void BM_RmsNormForward(benchmark::State& state) {
    const Tensor inp({kRows, kWidth}), weight({kWidth}, 0.1f, 1.f), out({kRows, kWidth}), rstd({kRows});
    run(
        state,
        [&](Backend& b) { b.rmsnorm_forward(out.view(), rstd.view(), inp.view(), weight.view(), 1e-5f); },
        int64_t{kRows} * kWidth);
}

void BM_LayerNormBackward(benchmark::State& state) {
    const Tensor inp({kRows, kWidth}), weight({kWidth}, 0.1f, 1.f), dout({kRows, kWidth}),
        dinp({kRows, kWidth});
    const Tensor mean({kRows}, 0.1f), rstd({kRows}, 0.1f, 1.f), dweight({kWidth}), dbias({kWidth});
    run(
        state,
        [&](Backend& b) {
            b.layernorm_backward(dinp.view(), dweight.view(), dbias.view(), dout.view(), inp.view(),
                                 weight.view(), mean.view(), rstd.view());
        },
        int64_t{kRows} * kWidth);
}

void BM_RmsNormBackward(benchmark::State& state) {
    const Tensor inp({kRows, kWidth}), weight({kWidth}, 0.1f, 1.f), dout({kRows, kWidth}),
        dinp({kRows, kWidth});
    const Tensor rstd({kRows}, 0.1f, 1.f), dweight({kWidth});
    run(
        state,
        [&](Backend& b) {
            b.rmsnorm_backward(dinp.view(), dweight.view(), dout.view(), inp.view(), weight.view(),
                               rstd.view());
        },
        int64_t{kRows} * kWidth);
}

void BM_GeluForward(benchmark::State& state) {
    const Tensor inp({kRows, 4 * kWidth}, 2.f), out({kRows, 4 * kWidth});
    run(
        state, [&](Backend& b) { b.gelu_forward(out.view(), inp.view()); }, int64_t{kRows} * 4 * kWidth);
}

void BM_SwiGluForward(benchmark::State& state) {
    const Tensor gate_up({kRows, 2 * kHidden}, 2.f), out({kRows, kHidden});
    run(
        state, [&](Backend& b) { b.swiglu_forward(out.view(), gate_up.view()); }, int64_t{kRows} * kHidden);
}

void BM_GeluBackward(benchmark::State& state) {
    const Tensor pre({kRows, 4 * kWidth}, 2.f), dout({kRows, 4 * kWidth}), dinp({kRows, 4 * kWidth});
    run(
        state, [&](Backend& b) { b.gelu_backward(dinp.view(), dout.view(), pre.view()); },
        int64_t{kRows} * 4 * kWidth);
}

void BM_SwiGluBackward(benchmark::State& state) {
    const Tensor gate_up({kRows, 2 * kHidden}, 2.f), dout({kRows, kHidden}), dgate_up({kRows, 2 * kHidden});
    run(
        state, [&](Backend& b) { b.swiglu_backward(dgate_up.view(), dout.view(), gate_up.view()); },
        int64_t{kRows} * kHidden);
}

// Attention forward (state.range(1) == 0) or forward + backward, multi-head (state.range(0) == 0)
// or grouped with RoPE.
void BM_Attention(benchmark::State& state) {
    const bool grouped = state.range(0) != 0, backward = state.range(1) != 0;
    const AttentionParams params =
        grouped ? AttentionParams{kHeads, kKvHeads, 10000.f} : multi_head_attention(kHeads);
    const int width = (kHeads + 2 * params.n_kv_head) * kHeadDim;
    const Tensor qkv({kBatch, kLength, width}, 1.5f), dqkv({kBatch, kLength, width});
    const Tensor out({kBatch, kLength, kHeads * kHeadDim}), dout({kBatch, kLength, kHeads * kHeadDim});
    const Tensor lse({kBatch, kHeads, kLength});
    run(
        state,
        [&](Backend& b) {
            b.attention_forward(out.view(), lse.view(), qkv.view(), params);
            if (backward) b.attention_backward(dqkv.view(), dout.view(), qkv.view(), lse.view(), params);
        },
        int64_t{kBatch} * kLength * kHeads * kHeadDim);
    state.SetLabel(std::string(grouped ? "12 heads on 4, RoPE" : "12 heads") +
                   (backward ? ", forward + backward" : ", forward"));
}

// Attention forward + backward of one sequence of state.range(0) tokens, 12 heads of 64, under the
// document mask with documents of state.range(1) tokens (the last one shorter), or causal (0);
// under a sliding window of state.range(2) keys (0: none).
void BM_AttentionDocuments(benchmark::State& state) {
    const int T = static_cast<int>(state.range(0)), document_length = static_cast<int>(state.range(1));
    const int window = static_cast<int>(state.range(2));
    const int width = 3 * kHeads * kHeadDim;
    const Tensor qkv({1, T, width}, 1.5f), dqkv({1, T, width});
    const Tensor out({1, T, kHeads * kHeadDim}), dout({1, T, kHeads * kHeadDim}), lse({1, kHeads, T});
    Buffer bounds = Buffer::host(3 * static_cast<size_t>(T) * sizeof(int32_t));
    auto* tokens = static_cast<int32_t*>(bounds.data());
    for (int t = 0; t < T; ++t)
        tokens[t] = document_length > 0 && t % document_length == document_length - 1 ? 1 : 0;
    AttentionParams params = multi_head_attention(kHeads);
    params.window = window;
    if (document_length > 0) {
        params.document_starts = TensorView(tokens + T, DType::i32, {1, T});
        params.document_ends = TensorView(tokens + 2 * T, DType::i32, {1, T});
    }
    run(
        state,
        [&](Backend& b) {
            if (document_length > 0)
                b.document_bounds(params.document_starts, params.document_ends,
                                  TensorView(tokens, DType::i32, {1, T}), 1);
            b.attention_forward(out.view(), lse.view(), qkv.view(), params);
            b.attention_backward(dqkv.view(), dout.view(), qkv.view(), lse.view(), params);
        },
        int64_t{T} * kHeads * kHeadDim, 1);
    state.SetLabel(document_length > 0 ? "documents of " + std::to_string(document_length)
                   : window > 0        ? "window of " + std::to_string(window)
                                       : std::string("causal"));
}

// Median of 5 repetitions of at least 0.3 s each.
#define MIXGPT_CPU_OP_BENCHMARK(name)   \
    BENCHMARK(name)                     \
        ->UseRealTime()                 \
        ->Unit(benchmark::kMillisecond) \
        ->MinTime(0.3)                  \
        ->Repetitions(5)                \
        ->ReportAggregatesOnly(true)
MIXGPT_CPU_OP_BENCHMARK(BM_LayerNormForward);
MIXGPT_CPU_OP_BENCHMARK(BM_RmsNormForward);
MIXGPT_CPU_OP_BENCHMARK(BM_LayerNormBackward);
MIXGPT_CPU_OP_BENCHMARK(BM_RmsNormBackward);
MIXGPT_CPU_OP_BENCHMARK(BM_GeluForward);
MIXGPT_CPU_OP_BENCHMARK(BM_SwiGluForward);
MIXGPT_CPU_OP_BENCHMARK(BM_GeluBackward);
MIXGPT_CPU_OP_BENCHMARK(BM_SwiGluBackward);
MIXGPT_CPU_OP_BENCHMARK(BM_Attention)->Args({0, 0})->Args({1, 0})->Args({0, 1})->Args({1, 1});
MIXGPT_CPU_OP_BENCHMARK(BM_AttentionDocuments)
    ->ArgsProduct({{512, 1024, 2048, 4096}, {0, 512, 128}, {0}})
    ->ArgsProduct({{1024, 2048, 4096}, {0}, {512}});

}  // namespace
}  // namespace mixgpt
