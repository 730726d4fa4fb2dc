#include "kernels/precision.h"

#include "core/error.h"

namespace mixgpt {

Precision parse_precision(const std::string& name) {
    if (name == "fp32") return Precision::fp32;
    if (name == "tf32") return Precision::tf32;
    if (name == "bf16") return Precision::bf16;
    if (name == "fp16") return Precision::fp16;
    if (name == "fp8") return Precision::fp8;
    throw Error("unknown precision '" + name + "' (expected fp32, tf32, bf16, fp16 or fp8)");
}

const char* precision_name(Precision precision) {
    switch (precision) {
        case Precision::fp32:
            return "fp32";
        case Precision::tf32:
            return "tf32";
        case Precision::bf16:
            return "bf16";
        case Precision::fp16:
            return "fp16";
        case Precision::fp8:
            return "fp8";
    }
    return "unknown";
}

DType activation_dtype(Precision precision) {
    switch (precision) {
        case Precision::bf16:
        case Precision::fp8:
            return DType::bf16;
        case Precision::fp16:
            return DType::f16;
        default:
            return DType::f32;
    }
}

}  // namespace mixgpt
