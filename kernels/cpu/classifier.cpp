// Fused softmax + cross-entropy over the real vocabulary columns, with the logit
// gradients written in place. Rows are independent: parallel over rows, each row
// converted to float in a per-thread scratch row.
//
// The exponentials, their sum and the loss are in double, each row summed in column order (the
// same bits for any thread count), and each result rounded once to float: a float sum of 50,257
// terms drops the small ones once the sum has grown (a confident row's tail vanishes entirely),
// which lowered the loss systematically, and this backend is the oracle the GPU is judged by.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/tensor_checks.h"

namespace mixgpt::cpu {

void CpuBackend::classifier(TensorView losses, TensorView logits, TensorView targets, int vocab_size,
                            bool compute_gradient, float gradient_scale, const StepStatus* status) {
    const char* op = "classifier";
    require_rank(logits, act(), 2, op, "logits");
    const int64_t N = logits.dim(0), Vp = logits.dim(1), V = vocab_size;
    require(V > 0 && V <= Vp, op, "vocab_size is outside [1, padded vocabulary]");
    require_tensor(losses, DType::f32, {N}, op, "losses");
    require_int32(targets, {N}, op, "targets");
    const int32_t* target = targets.as<const int32_t>();
    for (int64_t i = 0; i < N; ++i)
        if (target[i] < 0 || target[i] >= V)
            throw Error("cpu classifier: target " + std::to_string(target[i]) + " at index " +
                        std::to_string(i) + " is outside [0, " + std::to_string(V) + ")");
    const float factor = gradient_scale * (status != nullptr ? status->loss_scale : 1.f);
    const DType dtype = act();
    const size_t element = dtype_size(dtype);
    auto* bytes = static_cast<char*>(logits.data);
    float* loss = losses.as<float>();
#pragma omp parallel
    {
        std::vector<float> row(static_cast<size_t>(Vp));
        std::vector<double> exponentials(static_cast<size_t>(V));  // (V) exp(logit - max logit)
#pragma omp for schedule(static)
        for (int64_t i = 0; i < N; ++i) {
            char* stored = bytes + static_cast<size_t>(i * Vp) * element;
            convert_to_float(stored, dtype, row.data(), static_cast<size_t>(V));
            const double max_logit = *std::max_element(row.data(), row.data() + V);
            double sum = 0.0;
            for (int64_t j = 0; j < V; ++j) {
                exponentials[j] = std::exp(static_cast<double>(row[j]) - max_logit);
                sum += exponentials[j];
            }
            loss[i] = static_cast<float>(max_logit - static_cast<double>(row[target[i]]) + std::log(sum));
            if (!compute_gradient) continue;
            const double scale = factor / sum;
            for (int64_t j = 0; j < V; ++j)
                row[j] = static_cast<float>(exponentials[j] * scale);  // factor * softmax
            row[target[i]] = static_cast<float>(exponentials[target[i]] * scale - factor);
            std::fill(row.data() + V, row.data() + Vp, 0.f);
            convert_from_float(row.data(), stored, dtype, static_cast<size_t>(Vp));
        }
    }
}

}  // namespace mixgpt::cpu
