// The model, written once against the op interface (kernels/ops.h) and read from its family's
// description (model/family.h): embeddings, pre-norm blocks (causal self-attention, MLP), final
// norm, output head. The same code runs GPT-2 and the Llama-style family on every backend and
// precision. Owns its parameters, gradients, working copy and activations in backend memory.
#pragma once

#include <initializer_list>
#include <memory>
#include <vector>

#include "core/memory.h"
#include "kernels/ops.h"
#include "model/activations.h"
#include "model/config.h"
#include "model/family.h"
#include "model/fp8_linears.h"
#include "model/gradient_stages.h"
#include "model/parameters.h"
#include "model/weights.h"

namespace mixgpt {

// How the parameter memory is laid out for ZeRO-1 (dist/shard_layout.h plans it). Default: the
// arenas hold the n parameters, and every fp32 master is kept (in fp32/tf32 the masters are the
// working copy).
// - arena_elements (0: n): the size of the gradient and working-copy arenas; the elements past n
//   are zero padding, so that collectives can cut their ranges into equal pieces.
// - master_pieces: ranges of that arena, ascending and disjoint (they may reach into the padding),
//   whose fp32 masters the model keeps, stored one after another (a rank's ZeRO-1 shard); the
//   working copy is then an arena of its own in every precision. Empty: every master.
struct ParameterSharding {
    int64_t arena_elements = 0;
    std::vector<ElementRange> master_pieces;
};

class GPT {
public:
    // Allocates everything for batches of up to (batch_size, seq_len); parameters start at zero.
    // Under Precision::fp8 the linear layers multiply in FP8 as `fp8` says (model/fp8_linears.h).
    GPT(Backend& backend, const GPTConfig& config, int batch_size, int seq_len, Recompute recompute,
        ParameterSharding sharding = {}, const Fp8Options& fp8 = {});
    GPT(const GPT&) = delete;
    GPT& operator=(const GPT&) = delete;

    const GPTConfig& config() const { return config_; }
    const ParameterLayout& layout() const { return layout_; }
    int batch_size() const { return batch_size_; }
    int seq_len() const { return seq_len_; }
    Recompute recompute() const { return recompute_; }
    Backend& backend() const { return backend_; }
    // The FP8 scaling state and saturation counts under Precision::fp8, else null.
    Fp8Linears* fp8() const { return fp8_.get(); }

    // The masters kept: every one, or those of master_pieces() one after another.
    TensorView master_parameters();  // (n, or the pieces' total count) f32, backend memory
    const std::vector<ElementRange>& master_pieces() const { return master_pieces_; }
    bool keeps_all_masters() const { return master_pieces_.empty(); }
    int64_t arena_elements() const { return arena_elements_; }  // n and the padding
    TensorView gradients();                                     // (n) f32, backend memory
    TensorView working_parameters();  // (n) act; the masters' memory when they are all kept in fp32/tf32
    // The same arenas with their padding: (arena_elements()) f32 and act.
    TensorView gradient_arena();
    TensorView working_arena();
    // Takes `count` (== layout().total()) fp32 values: the masters kept, and the whole working copy.
    // Throws Error when the padding rows of a vocabulary-sized tensor are not zero.
    void load_master_parameters(const float* host_values, int64_t count);
    void refresh_working_copy();  // the masters kept -> their part of the working copy (cast)
    void zero_gradients();

    // tokens, targets: (b, t) DType::i32 in backend memory with b <= batch_size, t <= seq_len.
    // Returns losses (b, t) f32 in backend memory.
    TensorView forward(TensorView tokens, TensorView targets);
    // Forward, loss, backward: gradients += d(sum of losses * gradient_scale * loss_scale)/dparams,
    // loss_scale read from status in backend memory (null: 1). Returns the (unscaled) losses (b, t) f32.
    // `ready`, if set, is called as the backward pass completes each stage's gradients
    // (model/gradient_stages.h).
    TensorView forward_backward(TensorView tokens, TensorView targets, float gradient_scale,
                                const StepStatus* status, const GradientsReady& ready = {});
    // The z-loss weight of forward_backward (train's --z-loss; 0, the default: off): the objective
    // gains z_loss * logsumexp(logits)^2 per position, its gradient fused into the classifier; the
    // losses returned stay the cross-entropy alone. forward() never adds it.
    void set_z_loss(float z_loss);
    float z_loss() const { return z_loss_; }
    // z_loss * logsumexp^2 (b, t) f32 in backend memory, of the last forward_backward under a z-loss.
    TensorView z_losses();
    // Logits (b, t, Vp) act of the last forward() (capped under config().logit_softcap, the values
    // the loss saw, rounded to act); after forward_backward they hold the logit gradients.
    TensorView logits();

    // Telemetry (train/telemetry.h): while set, every forward pass records tensor_statistics
    // (kernels/ops.def, with `small` as its threshold) of each block's output x_{l+1} into
    // block_outputs[l], of each layer's attention log-sum-exp (lse (b, H, t) f32) into
    // attention_lse[l], of the logits before the loss (and before a soft-cap) into logits, and
    // each block output's exponent bins (exponent_histogram) into output_exponents[l]: backend
    // memory, overwritten by each pass. All null (the default): nothing recorded.
    struct ForwardStatistics {
        TensorStatistics* block_outputs = nullptr;  // (n_layer)
        TensorStatistics* attention_lse = nullptr;  // (n_layer)
        TensorStatistics* logits = nullptr;
        uint64_t* output_exponents = nullptr;  // (n_layer, kExponentBins)
        float small = 0.f;
    };
    void record_statistics(const ForwardStatistics& statistics) { statistics_ = statistics; }
    int64_t last_tokens() const { return last_rows_ * last_length_; }  // b * t of the last forward
    // Of the last forward, under Recompute::none (which keeps them all): block `layer`'s output
    // x_{layer+1} (b*t, C) act, and its attention's log-sum-exp (b, H, t) f32.
    TensorView block_output(int layer) const { return block_activations(layer, last_rows_, last_length_).residual_out; }
    TensorView attention_lse(int layer) const { return block_activations(layer, last_rows_, last_length_).lse; }

    // Sampling with a KV cache (batch rows <= batch_size): forward of new tokens (rows, Tn) i32 in
    // backend memory, Tn <= seq_len, at positions [position, position + Tn) <= max_seq_len, after
    // earlier calls filled positions [0, position). Returns logits (rows, Vp) act of the last new position
    // (capped under config().logit_softcap, as forward()'s).
    TensorView forward_cached(TensorView tokens, int position);

private:
    // A norm's output and statistics (mean: LayerNorm only, else invalid).
    struct NormViews {
        TensorView out, mean, rstd;
    };
    // Views of the activations one block reads and writes, for a batch of (b, t).
    struct BlockActivations {
        TensorView residual_in;     // (N, C) x_l
        NormViews attention_norm;   // (N, C), (N), (N)
        TensorView qkv;             // (b, t, Q)
        TensorView attention;       // (b, t, C)
        TensorView lse;             // (b, H, t)
        TensorView qk_norm_rstd;    // (b, t, H + Hkv) under --qk-norm, else invalid
        TensorView attention_residual;  // (N, C) x_l + attention branch
        NormViews mlp_norm;         // (N, C), (N), (N)
        TensorView mlp_input;       // (N, M) before the MLP's activation
        TensorView mlp_hidden;      // (N, D) after it
        TensorView residual_out;    // (N, C) x_{l+1}
    };
    // The norm that follows a block: the next block's attention norm, or the final norm.
    struct NextNorm {
        NormViews views;
        TensorView weight, bias;
    };

    TensorView activation(Activation name, int layer, std::initializer_list<int64_t> dims) const;
    BlockActivations block_activations(int layer, int64_t b, int64_t t) const;
    NextNorm next_norm(int layer, int64_t b, int64_t t) const;
    // The embedding norm's output (residual x_0) and statistics, for N rows (--embedding-norm).
    NormViews embedding_norm_views(int64_t N) const;
    void check_batch(const TensorView& tokens, const char* what) const;
    // Layer `layer`'s attention parameters for a batch of (b, t): its window, and under the document
    // mask the bounds forward_blocks computed from the tokens (decoding: the new positions' starts).
    AttentionParams attention_params(int layer, int64_t b, int64_t t, bool decoding) const;
    // Under the document mask: the bounds of tokens (b, t) for attention_params (decoding: the
    // starts of new tokens at cache_position, continuing each row's document).
    void find_documents(TensorView tokens, int cache_position);
    // Under --positions document with learned positions: each token's place in its document (b, t)
    // i32, which find_documents writes; else an invalid view (the embedding's rows are t).
    TensorView document_positions(int64_t b, int64_t t) const;

    // The family's norm (LayerNorm or RMSNorm) forward, fused residual forward and backward.
    void norm_forward(const NormViews& out, TensorView inp, TensorView weight, TensorView bias);
    void residual_norm_forward(TensorView residual_out, const NormViews& out, TensorView residual_in,
                               TensorView branch, TensorView weight, TensorView bias);
    void norm_backward(TensorView dinp, TensorView dweight, TensorView dbias, TensorView dout, TensorView inp,
                       TensorView weight, const NormViews& statistics);
    // The linear layers' products (gpt_linear.cpp): in FP8 where fp8_ says so, else matmul_*.
    // out (M, N) = inp (M, K) · weight (N, K)^T [+ bias].
    void linear_forward(int layer, LinearRole role, TensorView out, TensorView inp, TensorView weight,
                        TensorView bias);
    // dinp (M, K) = dout (M, N) · weight (N, K).
    void linear_backward_input(int layer, LinearRole role, TensorView dinp, TensorView dout, TensorView weight);
    // dweight (N, K) += dout^T · inp; dbias (N) += column sums of dout (if valid).
    void linear_backward_weight(int layer, LinearRole role, TensorView dweight, TensorView dbias, TensorView dout,
                                TensorView inp);
    bool linear_in_fp8(int layer, LinearRole role) const { return fp8_ && fp8_->in_fp8(layer, role); }
    // out (N, D) = the MLP's activation of its input product (N, M): GELU or SwiGLU.
    void mlp_activation_forward(TensorView out, TensorView inp);

    // Embeddings and every block for tokens (b, t), up to the final norm's output (b*t, C).
    // cache_position >= 0: positions from there on, attending over the KV cache.
    void forward_blocks(TensorView tokens, int cache_position);
    // Block l from its (already normalized) input up to the MLP's activation: all that the
    // backward pass needs of it. cache_position >= 0: cached attention at that position.
    void block_forward_to_mlp_hidden(int layer, const BlockActivations& a, int cache_position);
    // The MLP's output projection, residual add and the next norm.
    void block_forward_finish(int layer, const BlockActivations& a, const NextNorm& next);
    void forward_pass(TensorView tokens, TensorView targets, bool compute_gradient, float gradient_scale,
                      const StepStatus* status);
    void backward_pass(TensorView tokens, const GradientsReady& ready);
    void block_backward(int layer, const BlockActivations& a, int64_t b, int64_t t);
    void mlp_backward(int layer, const BlockActivations& a, int64_t N);

    Backend& backend_;
    GPTConfig config_;
    const Family& family_;
    ParameterLayout layout_;
    int batch_size_;
    int seq_len_;
    Recompute recompute_;
    DType act_;
    ActivationLayout activation_layout_;
    int64_t arena_elements_ = 0, masters_count_ = 0;
    std::vector<ElementRange> master_pieces_;
    Buffer masters_, gradients_, working_, activations_;
    ModelTensors weights_;                     // views of the working copy
    ModelTensors grads_;                       // views of the gradients
    int64_t last_rows_ = 0, last_length_ = 0;  // (b, t) of the last forward
    float z_loss_ = 0.f;
    // forward_cached's state, allocated on first use: K and V caches (L, B, maxT, Hkv hd) act,
    // the last positions' final-norm rows (B, C) and their logits (B, Vp).
    Buffer cache_;
    TensorView k_cache_, v_cache_, last_norm_, cached_logits_;
    std::unique_ptr<Fp8Linears> fp8_;  // Precision::fp8 only
    ForwardStatistics statistics_;  // record_statistics
    // Under the document mask (config().document_separator >= 0): i32 document starts and ends of
    // the last batch (B*T each), the decoding starts (B*T), each row's open document (B), and
    // under --positions document with learned positions the tokens' positions (B*T).
    Buffer documents_;
};

}  // namespace mixgpt
