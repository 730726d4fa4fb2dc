// The op interface: every computation of a model's forward and backward pass, and of the
// optimizer step, goes through a Backend. The model is written once against it; kernels/cpu
// (the reference) and kernels/cuda implement it. The ops themselves, each with its shapes, are
// listed once in kernels/ops.def; this header holds the types they take and the Backend class.
//
// Conventions
// - Tensors are TensorViews in the backend's memory (host for CPU, device for
//   CUDA). "act" below means the run's activation dtype (activation_dtype(precision)):
//   fp32, bf16 or fp16. Parameter gradients, optimizer state, LayerNorm and RMSNorm
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
#include "kernels/fp8_scaling.h"
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

// What tensor_statistics (kernels/ops.def) measures of one tensor, in backend memory (32 bytes).
struct TensorStatistics {
    double sum_squares = 0;  // of the finite elements
    double amax = 0;         // the largest |x| of the finite elements
    double small = 0;        // finite elements with |x| below the op's `small` (zeros included)
    double non_finite = 0;   // Inf and NaN elements
};
static_assert(sizeof(TensorStatistics) == 32, "TensorStatistics is copied to the host as 4 doubles");

// The bins of exponent_histogram (kernels/ops.def), u64 counts of a tensor's elements:
//   [0]                                   zeros (either sign)
//   [1 + e - kHistogramExponentMin]        finite nonzero x with floor(log2|x|) = e, for every e a
//                                         float has: kHistogramExponentMin (fp32's smallest
//                                         subnormal, 2^-149) .. kHistogramExponentMax (127)
//   [kExponentBins - 1]                   Inf and NaN
constexpr int kHistogramExponentMin = -149;
constexpr int kHistogramExponentMax = 127;
constexpr int kExponentBins = kHistogramExponentMax - kHistogramExponentMin + 3;  // 279

struct AdamWHyper {
    float learning_rate = 0.f;
    float beta1 = 0.9f;
    float beta2 = 0.95f;
    float epsilon = 1e-8f;
    float weight_decay = 0.1f;         // applied to elements [0, decay_count) only
    float max_grad_norm = 1.0f;        // clip by global norm; <= 0 disables clipping
    bool stochastic_rounding = false;  // bf16 working copy only
    uint64_t seed = 0;                 // for stochastic rounding; vary per step
    // false: the bias correction uses optimizer_steps + 1 and the counter is left as it is (every
    // call of a step over several parameter groups but the last, which counts the step).
    bool count_step = true;
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
    // CUDA: the fast attention where it applies: the fused flash kernels (bf16/fp16, head_dim 64 or
    // 128) and, for fp32 activations (fp32 and tf32 runs), cuBLASLt products
    // (kernels/cuda/attention_products.h); false keeps the simple attention kernels everywhere (for
    // comparisons).
    bool flash_attention = true;
    // CUDA: the most scratch the fp32 attention's products may take for their (T,T) score matrices
    // (two per head, heads in chunks); a length whose one head needs more takes the simple kernels.
    size_t attention_products_bytes = size_t{256} << 20;
};

// The epilogue of Backend::matmul_forward: what happens to the product before it is stored.
enum class MatmulEpilogue {
    none,       // out = inp · weight^T (Llama-style blocks, the output head)
    bias,       // out = inp · weight^T + bias
    bias_gelu,  // pre_gelu = inp · weight^T + bias, out = gelu(pre_gelu) (GPT-2's MLP)
};

// What the fused classifier computes besides softmax cross-entropy (Backend::classifier, shapes in
// kernels/ops.def). softcap > 0 caps the logits z at c = softcap · tanh(z / softcap) before the
// softmax (Gemma 2, nanochat); z_loss > 0 adds z_loss · logsumexp(c)² per row to the objective
// (PaLM's z-loss). 0 turns either off.
struct ClassifierParams {
    int vocab_size = 0;  // V: the real columns; the rest of the padded row is ignored
    float softcap = 0.f;
    float z_loss = 0.f;
};

// The heads and positions of attention (Backend::attention_*, shapes in kernels/ops.def).
struct AttentionParams {
    constexpr AttentionParams(int heads = 0, int kv_heads = 0, float theta = 0.f)
        : n_head(heads), n_kv_head(kv_heads), rope_theta(theta) {}

    int n_head = 0;     // H: query heads
    int n_kv_head = 0;  // Hkv: key/value heads; divides H (H: multi-head, 1: multi-query attention)
    // Rotary position embedding (RoPE), Hugging Face's rotate-half convention: for i in [0, hd/2),
    // the pair (x[i], x[i + hd/2]) of every q and k head at position p becomes
    //   (x[i] cos a - x[i + hd/2] sin a,  x[i + hd/2] cos a + x[i] sin a),  a = p · rope_theta^(-2i/hd),
    // with cos a and sin a computed in double and rounded to fp32, the rest in fp32 (hd even).
    // 0: no rotation (GPT-2).
    float rope_theta = 0.f;
    // Document masking (--attention-mask document), (B,T) i32 in backend memory from document_bounds:
    // per position t of each sequence, the first position of t's document (document_starts) and one
    // past its last (document_ends). Query t sees keys [starts[t], t]; key u is seen by queries
    // [u, ends[u]). Both nondecreasing along t, which lets the kernels skip whole tiles. Invalid
    // views: the causal mask alone. attention_forward_cached reads document_starts only: (B,Tn) for
    // its new positions, in cache positions (document_starts_decoding).
    TensorView document_starts, document_ends;
    // Sliding-window attention (--window): > 0, query t sees only keys t - window + 1 .. t (within its
    // document under the document mask); 0: no window.
    int window = 0;
};

// One tensor's slot in an FP8 scaling state held in backend memory (kernels/fp8_scaling.h; the
// model owns the state, model/fp8_linears.h). The fp8_matmul_* ops quantize an operand x as
// FP8(fl(x · scale[tensor])) and multiply by scale_inverse[tensor]:
//   delayed scaling: with the scale already there, recording max |x| into the history's slot 0
//                    (running max, NaN ignored) for fp8_update_delayed;
//   current scaling: with the scale of x's own amax (Fp8ScalingState::update_current), first.
// Elements that saturated are added to saturated[tensor].
struct Fp8TensorScaling {
    float* values = nullptr;         // Fp8ScalingState::flat(), backend memory
    uint64_t* saturated = nullptr;   // (tensors) counts, backend memory
    int tensors = 0;
    int tensor = 0;                  // the slot, 0 .. tensors-1
    Fp8Format format = Fp8Format::e4m3;
    Fp8ScalingConfig config;
};

// GPT-2's attention: n_head heads of q, k and v, no rotation.
inline AttentionParams multi_head_attention(int n_head) { return {n_head, n_head, 0.f}; }

// A backend implements every op of kernels/ops.def (the op list: names, arguments, shapes) and the
// memory functions below. Its class declares the ops' overrides from the same list:
//   #define MIXGPT_OP(name, parameters, arguments) void name parameters override;
//   #include "kernels/ops.def"
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
    // Bytes of scratch an attention op of length `seq_len` with `n_kv_head` key/value heads takes
    // beyond the model's memory plan (the CPU's per-thread (T, T) score matrices, the CUDA fp32
    // attention's per-head ones); 0 when none or not counted.
    virtual size_t attention_scratch_bytes(int64_t seq_len, int64_t n_kv_head) const = 0;

    // ---- the ops: kernels/ops.def ----
#define MIXGPT_OP(name, parameters, arguments) virtual void name parameters = 0;
#include "kernels/ops.def"
};

// Makes the backend named by options.device, "auto" decided and logged by resolve_device
// (kernels/device_choice.h); "cuda" throws Error in a build without CUDA or without a usable device.
std::unique_ptr<Backend> make_backend(const BackendOptions& options);
// Number of CUDA devices visible (0 in a build without CUDA or on a machine without GPU).
int cuda_device_count();
bool built_with_cuda();

}  // namespace mixgpt
