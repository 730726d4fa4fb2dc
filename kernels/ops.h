// The op interface: every computation of the GPT's forward and backward pass,
// and of the optimizer step, goes through a Backend. The model is written once
// against it; kernels/cpu (the reference) and kernels/cuda implement it.
//
// Conventions
// - Tensors are TensorViews in the backend's memory (host for CPU, device for
//   CUDA). "act" below means the run's activation dtype (activation_dtype(precision)):
//   fp32, bf16 or fp16. Parameter gradients, optimizer state, LayerNorm
//   statistics, attention log-sum-exp and losses are fp32 always.
// - "+=" marks outputs that accumulate into what is there; everything else is
//   overwritten. Ops are enqueued in order on the backend's one compute stream.
// - Every op checks shapes and dtypes and throws mixgpt::Error on a mismatch.
// - All reductions are deterministic: the same inputs give bit-identical outputs
//   run after run (and, on the CPU, whatever the thread count).
// - StepStatus lives in backend memory: the loss scale, the skip decision and
//   the optimizer's step counter are read and written there, so a training step
//   never waits on the host to decide whether to skip.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/available_memory.h"
#include "core/memory.h"
#include "core/tensor.h"
#include "kernels/precision.h"

namespace mixgpt {

// Training-step state kept in backend memory (one instance, 32 bytes).
struct StepStatus {
    float grad_norm_squared = 0.f;  // sum of squares of the (loss-scaled) gradients
    float loss_scale = 1.f;         // the scale the current step's loss was multiplied by
    int32_t skip = 0;               // 1: gradients non-finite, this step's update is skipped
    int32_t clean_steps = 0;        // consecutive non-skipped steps since the scale last changed
    int32_t skipped_steps = 0;      // total skipped updates so far
    int32_t optimizer_steps = 0;    // updates applied so far (AdamW's t after the update)
    int32_t reserved[2] = {0, 0};
};
static_assert(sizeof(StepStatus) == 32, "StepStatus is copied between host and device as 32 bytes");

struct AdamWHyper {
    float learning_rate = 0.f;
    float beta1 = 0.9f;
    float beta2 = 0.95f;
    float epsilon = 1e-8f;
    float weight_decay = 0.1f;         // applied to elements [0, decay_count) only
    float max_grad_norm = 1.0f;        // clip by global norm; <= 0 disables clipping
    bool stochastic_rounding = false;  // bf16 working copy only
    uint64_t seed = 0;                 // for stochastic rounding; vary per step
};

struct LossScaleConfig {
    bool dynamic = false;  // false: the scale never changes
    float growth_factor = 2.f;
    float backoff_factor = 0.5f;
    int32_t growth_interval = 2000;
    float min_scale = 1.f;         // the floor below which backoff never goes
    float max_scale = 16777216.f;  // 2^24
};

struct BackendOptions {
    std::string device = "cpu";  // "cpu", "cuda" or "auto" (kernels/device_choice.h)
    int device_index = 0;        // CUDA device ordinal
    Precision precision = Precision::fp32;
    int threads = 0;  // CPU threads; 0 = OpenMP's default
    // CUDA: fused flash-attention kernels where they apply (bf16/fp16, head_dim 64 or 128);
    // false keeps the simple attention kernels everywhere (for comparisons).
    bool flash_attention = true;
};

class Backend {
public:
    virtual ~Backend() = default;

    virtual std::string name() const = 0;  // "cpu" or "cuda:0 (NVIDIA H100 ...)"
    virtual Precision precision() const = 0;

    // ---- memory: zero-filled buffers in backend memory, and transfers ----
    virtual Buffer allocate(size_t bytes) = 0;
    // Host memory suited to fast transfers (pinned on CUDA).
    virtual Buffer allocate_host_staging(size_t bytes) = 0;
    virtual void copy_to_backend(void* destination, const void* host_source, size_t bytes) = 0;
    virtual void copy_to_host(void* host_destination, const void* source, size_t bytes) = 0;
    virtual void copy_within(void* destination, const void* source, size_t bytes) = 0;
    virtual void fill_zero(void* destination, size_t bytes) = 0;
    virtual void synchronize() = 0;
    // The CUDA stream (a cudaStream_t) the ops are enqueued on, so that work on other streams
    // (collectives) can be ordered with them; null for a backend whose ops are complete when
    // they return (the CPU).
    virtual void* cuda_stream() const { return nullptr; }
    // Peak backend memory allocated so far (device memory on CUDA, 0 if unknown).
    virtual size_t peak_memory_bytes() const = 0;
    // Backend memory this process can still allocate (host limits on the CPU, cudaMemGetInfo's free
    // device memory on CUDA), for the check of a memory plan before a run allocates.
    virtual AvailableMemory available_memory() const = 0;
    // Bytes the backend allocates outside its Buffers while an attention op of length `seq_len`
    // runs (the CPU's per-thread (T, T) score matrices); 0 when none or not counted.
    virtual size_t attention_scratch_bytes(int64_t seq_len) const = 0;

    // ---- embeddings ----
    // out (B,T,C) act = wte[tokens] + wpe[t]; tokens (B,T) i32; wte (Vp,C) act; wpe (maxT,C) act
    virtual void embedding_forward(TensorView out, TensorView tokens, TensorView wte, TensorView wpe) = 0;
    // dwte (Vp,C) f32 +=, dwpe (maxT,C) f32 +=; dout (B,T,C) act; tokens (B,T) i32
    virtual void embedding_backward(TensorView dwte, TensorView dwpe, TensorView dout, TensorView tokens) = 0;

    // ---- layer norm (statistics in fp32, eps = 1e-5) ----
    // out (N,C) act = LN(inp) * weight + bias; mean, rstd (N) f32; inp (N,C) act; weight, bias (C) act
    virtual void layernorm_forward(TensorView out, TensorView mean, TensorView rstd, TensorView inp,
                                   TensorView weight, TensorView bias) = 0;
    // residual_out (N,C) act = residual_in + branch; then out = LN(residual_out) as above.
    virtual void residual_layernorm_forward(TensorView residual_out, TensorView out, TensorView mean,
                                            TensorView rstd, TensorView residual_in, TensorView branch,
                                            TensorView weight, TensorView bias) = 0;
    // dinp (N,C) act +=; dweight, dbias (C) f32 +=; dout, inp (N,C) act; weight (C) act; mean, rstd (N) f32
    virtual void layernorm_backward(TensorView dinp, TensorView dweight, TensorView dbias, TensorView dout,
                                    TensorView inp, TensorView weight, TensorView mean, TensorView rstd) = 0;

    // ---- matrix products (inputs in act, fp32 accumulation; tf32 math under Precision::tf32) ----
    // out (M,N) act = inp (M,K) · weight (N,K)^T + bias (N) [bias may be invalid: none].
    // With pre_gelu valid: pre_gelu (M,N) act = that product, and out = gelu(pre_gelu).
    virtual void matmul_forward(TensorView out, TensorView pre_gelu, TensorView inp, TensorView weight,
                                TensorView bias) = 0;
    // dinp (M,K) act = dout (M,N) · weight (N,K); added to dinp when accumulate.
    virtual void matmul_backward_input(TensorView dinp, TensorView dout, TensorView weight,
                                       bool accumulate) = 0;
    // dweight (N,K) f32 += dout (M,N)^T · inp (M,K); dbias (N) f32 += column sums of dout (if valid).
    virtual void matmul_backward_weight(TensorView dweight, TensorView dbias, TensorView dout,
                                        TensorView inp) = 0;

    // ---- GELU (tanh approximation) ----
    // out (M,N) act = gelu(inp)
    virtual void gelu_forward(TensorView out, TensorView inp) = 0;
    // dinp (M,N) act = dout · gelu'(pre_gelu); dinp may alias dout.
    virtual void gelu_backward(TensorView dinp, TensorView dout, TensorView pre_gelu) = 0;

    // ---- causal multi-head attention, scale 1/sqrt(head_dim) ----
    // qkv (B,T,3C) act: [q | k | v] along the last axis, head h at columns h*hd..(h+1)*hd of each.
    // out (B,T,C) act; lse (B,H,T) f32 = log-sum-exp of each query's scaled scores (for backward).
    virtual void attention_forward(TensorView out, TensorView lse, TensorView qkv, int n_head) = 0;
    // dqkv (B,T,3C) act (overwritten); dout, out (B,T,C) act; qkv (B,T,3C) act; lse (B,H,T) f32
    virtual void attention_backward(TensorView dqkv, TensorView dout, TensorView qkv, TensorView out,
                                    TensorView lse, int n_head) = 0;
    // Inference with a KV cache: qkv (B,Tn,3C) act holds Tn new positions starting at `position`.
    // Their k, v are written into k_cache, v_cache (B,maxT,C) act at [position, position+Tn), and
    // out (B,Tn,C) act attends causally over cache positions [0, position+Tn).
    virtual void attention_forward_cached(TensorView out, TensorView qkv, TensorView k_cache,
                                          TensorView v_cache, int position, int n_head) = 0;

    // ---- fused classifier ----
    // logits (N,Vp) act, of which columns [0, vocab_size) are real; targets (N) i32; losses (N) f32.
    // losses[i] = logsumexp(logits[i, :V]) - logits[i, targets[i]].
    // With compute_gradient, logits are overwritten in place by the logit gradients
    //   d[i,j] = gradient_scale * loss_scale * (softmax(logits[i])_j - [j == targets[i]]),
    // 0 in padded columns, where loss_scale = status->loss_scale (1 if status is null).
    virtual void classifier(TensorView losses, TensorView logits, TensorView targets, int vocab_size,
                            bool compute_gradient, float gradient_scale, const StepStatus* status) = 0;

    // ---- optimizer step ----
    // status->grad_norm_squared = sum of grads (n) f32 squared, in one deterministic pass;
    // status->skip = 1 when that sum is not finite (any gradient Inf or NaN), else 0.
    virtual void grad_norm_squared(StepStatus* status, TensorView grads) = 0;
    // status->skip = 1 when status->grad_norm_squared is not finite, else 0: the decision of
    // grad_norm_squared, taken again after the per-rank sums were combined (data parallelism).
    virtual void decide_skip(StepStatus* status) = 0;
    // Unless status->skip: AdamW on the fp32 masters. Gradients are unscaled by 1/loss_scale and
    // clipped to max_grad_norm (using grad_norm_squared), weight decay is applied to elements
    // [0, decay_count), moments and masters are updated, optimizer_steps is incremented (the bias
    // correction uses the incremented value), and working (n) act receives the new masters.
    // params, grads, m, v: (n) f32; working: (n) act (may be invalid when act is fp32 and working
    // aliases params).
    virtual void adamw_step(TensorView params, TensorView grads, TensorView m, TensorView v,
                            TensorView working, int64_t decay_count, const AdamWHyper& hyper,
                            StepStatus* status) = 0;
    // After adamw_step: skipped steps count and back off the scale (dynamic only, down to
    // min_scale); clean steps count, and after growth_interval clean steps the scale grows.
    virtual void update_loss_scale(StepStatus* status, const LossScaleConfig& config) = 0;

    // ---- element-wise utilities ----
    // out (n) in out's dtype = in (n) in in's dtype, rounded to nearest even.
    virtual void cast(TensorView out, TensorView in) = 0;
    // x (n) f32 *= factor
    virtual void scale(TensorView x, float factor) = 0;
};

// Makes the backend named by options.device, "auto" decided and logged by resolve_device
// (kernels/device_choice.h); "cuda" throws Error in a build without CUDA or without a usable device.
std::unique_ptr<Backend> make_backend(const BackendOptions& options);
// Number of CUDA devices visible (0 in a build without CUDA or on a machine without GPU).
int cuda_device_count();
bool built_with_cuda();

}  // namespace mixgpt
