#include "study/flops.h"

namespace mixgpt {

double training_flops_per_token(const GPTConfig& config, int seq_len) {
    const double n = static_cast<double>(config.num_parameters());
    return 6.0 * n + 6.0 * config.n_layer * static_cast<double>(seq_len) * config.n_embd;
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
                return peak.half;
            case Precision::tf32:
                return peak.tf32;
            case Precision::fp32:
                return peak.fp32;
        }
    }
    return 0.0;
}

}  // namespace mixgpt
