// init_parameters (declared in model/parameters.h).
#include <algorithm>
#include <cmath>

#include "model/parameters.h"

namespace mixgpt {
namespace {

uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// A standard normal value determined by (stream, index) alone (Box-Muller on two hashed uniforms).
double normal(uint64_t stream, int64_t index) {
    const uint64_t bits = splitmix64(stream ^ splitmix64(static_cast<uint64_t>(index)));
    const double u1 = (static_cast<double>(bits >> 11) + 1.0) * 0x1.0p-53;      // (0, 1]
    const double u2 = static_cast<double>(splitmix64(bits) >> 11) * 0x1.0p-53;  // [0, 1)
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

// Rows of a weight matrix and the std they start with: one block for most, the q, k and v heads of
// the packed QKV product and SwiGLU's gate and up apart (the separate matrices nanochat has).
struct RowBlock {
    int64_t rows;
    double std;
};

// nanochat's fan-in rule for a matrix (out, in): N(0, 1/in · min(1, out/in)).
double fan_in_std(int64_t out, int64_t in) {
    return 1.0 / std::sqrt(static_cast<double>(in)) *
           std::min(1.0, std::sqrt(static_cast<double>(out) / static_cast<double>(in)));
}

std::vector<RowBlock> row_blocks(const GPTConfig& config, const ParameterView& view, Init init) {
    constexpr double kStd = 0.02;
    const int64_t rows = view.shape[0];
    if (config.init == InitScheme::gpt2)
        return {{rows, init == Init::residual_normal ? kStd / std::sqrt(2.0 * config.n_layer) : kStd}};
    if (view.role == Role::token_embedding || view.role == Role::position_embedding) return {{rows, 1.0}};
    const int64_t in = view.shape.size() > 1 ? view.shape[1] : 1;
    if (view.role == Role::qkv_weight) {
        const int64_t q = int64_t{config.n_head} * config.head_dim();
        const int64_t kv = int64_t{config.kv_heads()} * config.head_dim();
        return {{q, fan_in_std(q, in)}, {kv, fan_in_std(kv, in)}, {kv, fan_in_std(kv, in)}};
    }
    if (view.role == Role::mlp_input_weight && config.mlp_kind() == MlpKind::swiglu)
        return {{rows / 2, fan_in_std(rows / 2, in)}, {rows / 2, fan_in_std(rows / 2, in)}};
    return {{rows, fan_in_std(view.role == Role::output_head ? config.vocab_size : rows, in)}};
}

}  // namespace

std::vector<float> init_parameters(const GPTConfig& config, const ParameterLayout& layout, uint64_t seed) {
    std::vector<float> values(static_cast<size_t>(layout.total()));
    for (size_t tensor = 0; tensor < layout.views().size(); ++tensor) {
        const ParameterView& view = layout.views()[tensor];
        const Init init = config.initialisation(view.role, view.init);
        float* out = values.data() + view.offset;
        if (init == Init::zeros || init == Init::ones) {
            std::fill(out, out + view.numel, init == Init::ones ? 1.f : 0.f);
            continue;
        }
        const int64_t columns = view.numel / view.shape[0];
        const int64_t count = view.real_rows * columns;  // the padding rows stay zero
        const uint64_t stream = splitmix64(seed ^ splitmix64(0x5eed0000ull + tensor));
        int64_t begin = 0;
        for (const RowBlock& block : row_blocks(config, view, init)) {
            const int64_t end = std::min(count, begin + block.rows * columns);
#pragma omp parallel for schedule(static)
            for (int64_t i = begin; i < end; ++i) out[i] = static_cast<float>(block.std * normal(stream, i));
            begin = end;
        }
    }
    return values;
}

}  // namespace mixgpt
