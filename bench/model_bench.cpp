// Forward + backward throughput of the GPT on the CPU backend: the d6 preset
// (6 layers, width 384, 6 heads) with GPT-2's vocabulary, B = 4, T = 256.
// Reports tokens/s of wall time (the "items_per_second" counter); one iteration is one
// forward_backward over the batch, without the optimizer step.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "kernels/ops.h"
#include "model/gpt.h"
#include "model/parameters.h"

namespace mixgpt {
namespace {

void BM_GptForwardBackward(benchmark::State& state) {
    const auto precision = static_cast<Precision>(state.range(0));
    const auto recompute = static_cast<Recompute>(state.range(1));
    const int batch = 4, length = 256;
    const GPTConfig config = GPTConfig::preset("d6", 50257, length);
    auto backend = make_backend({"cpu", 0, precision, 0});
    GPT model(*backend, config, batch, length, recompute);
    const std::vector<float> initial = init_parameters(config, model.layout(), 1);
    model.load_master_parameters(initial.data(), static_cast<int64_t>(initial.size()));
    std::mt19937 generator(1);
    std::uniform_int_distribution<int32_t> token(0, config.vocab_size - 1);
    std::vector<int32_t> tokens(2 * batch * length);
    for (int32_t& t : tokens) t = token(generator);
    const TensorView inputs(tokens.data(), DType::i32, {batch, length});
    const TensorView targets(tokens.data() + batch * length, DType::i32, {batch, length});
    for (auto _ : state) {
        model.zero_gradients();
        model.forward_backward(inputs, targets, 1.f / (batch * length), nullptr);
        backend->synchronize();
    }
    state.SetItemsProcessed(state.iterations() * batch * length);
    state.SetLabel(std::string(precision_name(precision)) + ", recompute " + recompute_name(recompute));
}

BENCHMARK(BM_GptForwardBackward)
    ->Args({static_cast<int>(Precision::fp32), static_cast<int>(Recompute::none)})
    ->Args({static_cast<int>(Precision::bf16), static_cast<int>(Recompute::none)})
    ->Args({static_cast<int>(Precision::fp32), static_cast<int>(Recompute::full)})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(5.0);

}  // namespace
}  // namespace mixgpt
