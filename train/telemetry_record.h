// What one measured step of train --telemetry-interval found (train/telemetry.h), and the forms it
// is written in: a metrics.jsonl line
//   {"type":"telemetry","step":100,"logit_amax":21.3,["loss_scale_headroom_bits":9.1,]
//    "blocks":[{"layer":0,"output_amax":12.5,"output_rms":1.02,"attention_lse_amax":6.1},...],
//    "tensors":[{"name":"h.0.attn.c_attn.weight","layer":0,"grad_norm":0.11,"weight_norm":7.9,
//                "update_ratio":0.0012,"grad_small_fraction":0.0,"grad_non_finite":0,"elements":...},...],
//    "grad_exponents":[{"layer":0,"zeros":12,"non_finite":0,"bins":[[-31,4],[-30,17],...]},...,
//                      {"layer":-1,...}],
//    "output_exponents":[{"layer":0,"zeros":0,"non_finite":0,"bins":[[-9,3],...]},...],
//    ["fp8":[{"layer":0,"role":"qkv","kind":"input","amax":3.2,"scale":140.0,"saturated":0,
//             "fp8_max":448.0,"headroom_bits":0.0},...]]}
// (non-finite numbers as null; grad_exponents' bins [e, count] for the nonzero bins of
// floor(log2|g|) = e, layer -1 the tensors outside the blocks; output_exponents the same of each
// block's output x_{l+1} (the last micro-batch's, rank 0's); fp8 in fp8 runs, layer -1 the
// head, headroom_bits = log2(fp8_max / (amax · scale)), below 0 when the step saturated), and
// per-layer TensorBoard scalars (telemetry_scalars) and histograms (telemetry_histograms).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/fp8_linears.h"
#include "train/event_records.h"

namespace mixgpt {

struct TensorTelemetry {
    std::string name;  // ParameterLayout's
    int layer = -1;    // the block; -1: model-level
    double grad_norm = 0, weight_norm = 0, update_ratio = 0;
    double grad_small_fraction = 0;  // of its gradient elements, below the working dtype's smallest normal
    int64_t grad_non_finite = 0;
    int64_t elements = 0;  // real ones (a vocabulary-sized tensor's padding left out)
};

struct BlockTelemetry {
    int layer = 0;
    double output_amax = 0, output_rms = 0;
    double attention_lse_amax = 0;
};

// One block's (layer -1: the tensors outside the blocks) elements in kernels/ops.h's exponent bins.
struct ExponentHistogram {
    int layer = 0;
    std::vector<uint64_t> counts;  // (kExponentBins)
};

struct TelemetryRecord {
    int64_t step = 0;  // optimizer steps completed, the measured one included
    std::vector<TensorTelemetry> tensors;
    std::vector<BlockTelemetry> blocks;
    double logit_amax = 0;
    double loss_scale_headroom_bits = -1;  // fp16 only; < 0: not measured
    std::vector<ExponentHistogram> grad_exponents;    // the gradients', per block, then the others'
    std::vector<ExponentHistogram> output_exponents;  // the block outputs', per block
    std::vector<Fp8StepTensor> fp8;  // fp8 runs
};

// log2(fp8_max / (amax · scale)): how far the step's largest scaled value stayed below the
// format's largest (negative: it saturated); +Inf when amax is 0.
double fp8_headroom_bits(const Fp8StepTensor& tensor);

// The record as one metrics.jsonl line, without the newline.
std::string telemetry_json(const TelemetryRecord& record);

// Tag and value of each TensorBoard scalar of the record: telemetry/logit_amax,
// telemetry/loss_scale_headroom_bits (fp16), and per layer l telemetry/<quantity>/<l> of
// output_amax, output_rms and attention_lse_amax, and over the block's tensors grad_norm
// (their joint norm), update_ratio (the joint update's norm over the joint weight's) and
// grad_small_fraction (of all their elements); fp8 runs: per layer and kind k (input, weight,
// gradient) telemetry/fp8_<k>_headroom_bits/<l> (the least over the block's linear layers) and
// telemetry/fp8_<k>_saturated/<l> (their sum).
std::vector<std::pair<std::string, double>> telemetry_scalars(const TelemetryRecord& record);

// A histogram of log2|x| per grad_exponents and output_exponents entry that counts any finite
// nonzero element, tagged telemetry/grad_log2/<layer> ("model" for layer -1) and
// telemetry/output_log2/<layer>: one bucket per exponent from the least to
// the greatest present, bucket [e, e + 1) limited at e + 1; min the least e, max the greatest
// e + 1, num the elements, sum and sum_squares over the buckets' midpoints e + 0.5. Zeros and
// non-finite elements are left out (the JSON line and grad_small_fraction count them).
std::vector<TensorBoardHistogram> telemetry_histograms(const TelemetryRecord& record);

}  // namespace mixgpt
