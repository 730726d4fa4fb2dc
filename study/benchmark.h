// `mixgpt bench`: training-step throughput per precision on random tokens (no dataset needed).
//
// Per precision: a fresh backend and model, warm-up steps, then timed steps. Timing is
// Backend::synchronize() + std::chrono::steady_clock around the timed steps (the op interface has
// no events; synchronizing once per measurement makes host time equal device time). On the CPU
// backend tf32, bf16 and fp16 are emulated (fp32 arithmetic on rounded storage), so their speed
// says nothing about hardware support; results say so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/op_profiler.h"
#include "kernels/precision.h"
#include "model/config.h"
#include "model/model_options.h"
#include "train/train_options.h"

namespace mixgpt {

// Data parallelism's gradient exchange, timed on one GPU: a 1-rank NCCL communicator (no MPI
// needed) issues every collective a multi-GPU step would, during the backward pass or after it.
enum class GradientExchange { none, overlapped, after_backward };
GradientExchange parse_gradient_exchange(const std::string& text);  // "none", "overlapped", "after-backward"
const char* gradient_exchange_name(GradientExchange exchange);

struct BenchOptions {
    ModelOptions model = [] {
        ModelOptions d12;
        d12.preset = "d12";
        return d12;
    }();
    int vocab_size = 50257;
    int batch_size = 4;
    int seq_len = 1024;
    std::vector<Precision> precisions{Precision::fp32, Precision::tf32, Precision::bf16, Precision::fp16};
    Recompute recompute = Recompute::none;
    int warmup_steps = 2;
    int steps = 5;
    double peak_tflops = 0;  // > 0: the peak to compute MFU against, instead of the device table
    std::string device = "cpu";
    int device_index = 0;
    bool flash_attention = true;  // CUDA: false times the simple attention kernels instead
    GradientExchange exchange = GradientExchange::none;  // CUDA only
    double bucket_mb = 25;                               // MiB of fp32 gradients per collective
    int threads = 0;
    uint64_t seed = 1;
    bool profile = false;  // time every op of the timed steps (kernels/op_profiler.h)
    // The step's optimizer: AdamW on every parameter, or Muon on the hidden matrices with its
    // defaults (train/muon_step.h) and AdamW on the rest.
    OptimizerKind optimizer = OptimizerKind::adamw;
    // > 0: every such step (warm-up included) is measured as train --telemetry-interval does
    // (train/telemetry.h), its record dropped: the cost of measuring.
    int telemetry_interval = 0;
};

struct BenchResult {
    Precision precision = Precision::fp32;
    std::string device_name;
    bool emulated = false;  // CPU backend: reduced precisions are emulated
    double ms_per_step = 0;
    double tokens_per_second = 0;
    double achieved_tflops = 0;  // model FLOPs (model/flops.h) per second
    double peak_tflops = 0;      // 0: unknown
    double mfu = 0;              // achieved / peak; NaN when the peak is unknown
    size_t peak_memory_bytes = 0;
    double last_loss = 0;
    std::vector<OpTime> profile;  // with BenchOptions::profile: the timed steps' ops, largest first
};

std::vector<BenchResult> run_benchmark(const BenchOptions& options);

std::string bench_table(const BenchOptions& options, const std::vector<BenchResult>& results);
std::string bench_json(const BenchOptions& options, const std::vector<BenchResult>& results);

}  // namespace mixgpt
