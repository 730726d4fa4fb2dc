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

}  // namespace

std::vector<float> init_parameters(const GPTConfig& config, const ParameterLayout& layout, uint64_t seed) {
    constexpr double kStd = 0.02;
    const double residual_std = kStd / std::sqrt(2.0 * config.n_layer);
    std::vector<float> values(static_cast<size_t>(layout.total()));
    for (size_t tensor = 0; tensor < layout.views().size(); ++tensor) {
        const ParameterView& view = layout.views()[tensor];
        const Init init = config.initialisation(view.role, view.init);
        float* out = values.data() + view.offset;
        if (init == Init::zeros || init == Init::ones) {
            std::fill(out, out + view.numel, init == Init::ones ? 1.f : 0.f);
            continue;
        }
        const double std = init == Init::residual_normal ? residual_std : kStd;
        const int64_t count = view.real_rows * (view.numel / view.shape[0]);  // the padding rows stay zero
        const uint64_t stream = splitmix64(seed ^ splitmix64(0x5eed0000ull + tensor));
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < count; ++i) out[i] = static_cast<float>(std * normal(stream, i));
    }
    return values;
}

}  // namespace mixgpt
