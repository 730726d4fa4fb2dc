#include "model/flops.h"

#include <limits>

namespace mixgpt {

double matmul_weights_per_token(const GPTConfig& config) {
    const double C = config.n_embd;
    const double per_block = C * static_cast<double>(config.size_of(Dim::qkv)) + C * C +
                             C * static_cast<double>(config.size_of(Dim::mlp_input)) +
                             static_cast<double>(config.size_of(Dim::mlp_hidden)) * C;
    return config.n_layer * per_block + static_cast<double>(config.vocab_size) * C;
}

double training_flops_per_token(const GPTConfig& config, int seq_len) {
    return 6.0 * matmul_weights_per_token(config) +
           6.0 * config.n_layer * static_cast<double>(seq_len) * config.n_embd;
}

double peak_tflops(const std::string& device_name, Precision precision) {
    struct Peak {
        const char* name;
        double half, tf32, fp32;  // half: bf16 and fp16
    };
    static const Peak kPeaks[] = {{"H100", 989, 494, 67}, {"H200", 989, 494, 67}, {"A100", 312, 156, 19.5}};
    for (const Peak& peak : kPeaks) {
        if (device_name.find(peak.name) == std::string::npos) continue;
        switch (precision) {
            case Precision::bf16:
            case Precision::fp16:
            case Precision::fp8:  // measured against the bf16 peak: only the linear layers run in FP8
                return peak.half;
            case Precision::tf32:
                return peak.tf32;
            case Precision::fp32:
                return peak.fp32;
        }
    }
    return 0.0;
}

double model_flops_utilization(const GPTConfig& config, int seq_len, double tokens_per_second,
                               double peak_tflops, int devices) {
    if (!(peak_tflops > 0)) return std::numeric_limits<double>::quiet_NaN();
    return training_flops_per_token(config, seq_len) * tokens_per_second / (peak_tflops * 1e12 * devices);
}

}  // namespace mixgpt
