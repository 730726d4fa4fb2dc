// Fused softmax + cross-entropy over the real vocabulary columns, with the logit soft-cap and the
// z-loss (kernels/ops.h, ClassifierParams) and the logit gradients written in place. Rows are
// independent: parallel over rows, each row converted to float in a per-thread scratch row.
//
// The capped logits, the exponentials, their sum and the loss are in double, each row summed in
// column order (the same bits for any thread count), and each result rounded once to float: a
// float sum of 50,257 terms drops the small ones once the sum has grown (a confident row's tail
// vanishes entirely), which lowered the loss systematically, and this backend is the oracle the
// GPU is judged by.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/tensor_checks.h"

namespace mixgpt::cpu {
namespace {

// c = softcap · tanh(z / softcap) in double; z itself when softcap is 0.
double capped(float z, double softcap) {
    return softcap > 0 ? softcap * std::tanh(static_cast<double>(z) / softcap) : static_cast<double>(z);
}

}  // namespace

void CpuBackend::classifier(TensorView losses, TensorView z_losses, TensorView logits, TensorView targets,
                            const ClassifierParams& params, bool compute_gradient, float gradient_scale,
                            const StepStatus* status) {
    const char* op = "classifier";
    require_rank(logits, act(), 2, op, "logits");
    const int64_t N = logits.dim(0), Vp = logits.dim(1), V = params.vocab_size;
    require(V > 0 && V <= Vp, op, "vocab_size is outside [1, padded vocabulary]");
    require(std::isfinite(params.softcap) && params.softcap >= 0, op, "softcap must be finite and >= 0");
    require(std::isfinite(params.z_loss) && params.z_loss >= 0, op, "z_loss must be finite and >= 0");
    require_tensor(losses, DType::f32, {N}, op, "losses");
    if (z_losses.valid()) require_tensor(z_losses, DType::f32, {N}, op, "z_losses");
    require_int32(targets, {N}, op, "targets");
    const int32_t* target = targets.as<const int32_t>();
    for (int64_t i = 0; i < N; ++i)
        if (target[i] < 0 || target[i] >= V)
            throw Error("cpu classifier: target " + std::to_string(target[i]) + " at index " +
                        std::to_string(i) + " is outside [0, " + std::to_string(V) + ")");
    const double softcap = params.softcap, z_loss = params.z_loss;
    const float factor = gradient_scale * (status != nullptr ? status->loss_scale : 1.f);
    const DType dtype = act();
    const size_t element = dtype_size(dtype);
    auto* bytes = static_cast<char*>(logits.data);
    float* loss = losses.as<float>();
    float* z_term = z_losses.valid() ? z_losses.as<float>() : nullptr;
#pragma omp parallel
    {
        std::vector<float> row(static_cast<size_t>(Vp));
        std::vector<double> c(static_cast<size_t>(V));             // (V) the capped logits
        std::vector<double> exponentials(static_cast<size_t>(V));  // (V) exp(c - max c)
#pragma omp for schedule(static)
        for (int64_t i = 0; i < N; ++i) {
            char* stored = bytes + static_cast<size_t>(i * Vp) * element;
            convert_to_float(stored, dtype, row.data(), static_cast<size_t>(V));
            for (int64_t j = 0; j < V; ++j) c[j] = capped(row[j], softcap);
            const double max_logit = *std::max_element(c.data(), c.data() + V);
            double sum = 0.0;
            for (int64_t j = 0; j < V; ++j) {
                exponentials[j] = std::exp(c[j] - max_logit);
                sum += exponentials[j];
            }
            const double lse = max_logit + std::log(sum);
            loss[i] = static_cast<float>(max_logit - c[target[i]] + std::log(sum));
            if (z_term != nullptr) z_term[i] = static_cast<float>(z_loss * lse * lse);
            if (!compute_gradient) {
                if (softcap == 0) continue;
                for (int64_t j = 0; j < V; ++j) row[j] = static_cast<float>(c[j]);
                convert_from_float(row.data(), stored, dtype, static_cast<size_t>(V));
                continue;
            }
            // d(ce + z_loss lse^2)/dc_j = (1 + 2 z_loss lse) softmax_j - [j == target]
            const double scale = factor * (1.0 + 2.0 * z_loss * lse) / sum;
            for (int64_t j = 0; j < V; ++j) {
                double g = exponentials[j] * scale - (j == target[i] ? factor : 0.0);
                if (softcap > 0) g *= 1.0 - (c[j] / softcap) * (c[j] / softcap);  // dc/dz
                row[j] = static_cast<float>(g);
            }
            std::fill(row.data() + V, row.data() + Vp, 0.f);
            convert_from_float(row.data(), stored, dtype, static_cast<size_t>(Vp));
        }
    }
}

void CpuBackend::logit_softcap(TensorView logits, int vocab_size, float softcap) {
    const char* op = "logit_softcap";
    require_rank(logits, act(), 2, op, "logits");
    const int64_t N = logits.dim(0), Vp = logits.dim(1), V = vocab_size;
    require(V > 0 && V <= Vp, op, "vocab_size is outside [1, padded vocabulary]");
    require(std::isfinite(softcap) && softcap > 0, op, "softcap must be finite and > 0");
    const DType dtype = act();
    const size_t element = dtype_size(dtype);
    auto* bytes = static_cast<char*>(logits.data);
#pragma omp parallel
    {
        std::vector<float> row(static_cast<size_t>(V));
#pragma omp for schedule(static)
        for (int64_t i = 0; i < N; ++i) {
            char* stored = bytes + static_cast<size_t>(i * Vp) * element;
            convert_to_float(stored, dtype, row.data(), static_cast<size_t>(V));
            for (float& z : row) z = static_cast<float>(capped(z, softcap));
            convert_from_float(row.data(), stored, dtype, static_cast<size_t>(V));
        }
    }
}

}  // namespace mixgpt::cpu
