// Construction, parameter memory and activation views of the GPT.
#include "model/gpt.h"

#include <algorithm>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"

namespace mixgpt {

GPT::GPT(Backend& backend, const GPTConfig& config, int batch_size, int seq_len, Recompute recompute,
         ParameterSharding sharding)
    : backend_(backend),
      config_(config),
      layout_(config),
      batch_size_(batch_size),
      seq_len_(seq_len),
      recompute_(recompute),
      act_(activation_dtype(backend.precision())),
      activation_layout_(config, batch_size, seq_len, backend.precision(), recompute),
      master_pieces_(std::move(sharding.master_pieces)) {
    const int64_t n = layout_.total();
    arena_elements_ = sharding.arena_elements == 0 ? n : sharding.arena_elements;
    MIXGPT_REQUIRE(
        arena_elements_ >= n && (arena_elements_ == n || !master_pieces_.empty()),
        format("GPT: an arena of %lld elements for %lld parameters (padding comes with master pieces)",
               static_cast<long long>(arena_elements_), static_cast<long long>(n)));
    int64_t previous_end = 0;
    for (const ElementRange& piece : master_pieces_) {
        MIXGPT_REQUIRE(
            piece.begin >= previous_end && piece.begin <= piece.end && piece.end <= arena_elements_,
            format("GPT: master piece [%lld, %lld) not ascending inside the %lld-element arena",
                   static_cast<long long>(piece.begin), static_cast<long long>(piece.end),
                   static_cast<long long>(arena_elements_)));
        previous_end = piece.end;
        masters_count_ += piece.count();
    }
    if (master_pieces_.empty()) masters_count_ = n;
    const auto arena = static_cast<size_t>(arena_elements_);
    // At least one element, so that a model keeping no masters still has a valid (unused) pointer.
    masters_ = backend_.allocate(static_cast<size_t>(std::max<int64_t>(masters_count_, 1)) * sizeof(float));
    gradients_ = backend_.allocate(arena * sizeof(float));
    if (act_ != DType::f32 || !keeps_all_masters()) {
        working_ = backend_.allocate(arena * dtype_size(act_));
        backend_.fill_zero(working_.data(), working_.bytes());  // the padding stays zero
    }
    activations_ = backend_.allocate(activation_layout_.total_bytes());
    weights_ = tensor_views(layout_, config_.n_layer, working_parameters().data, act_);
    grads_ = tensor_views(layout_, config_.n_layer, gradients_.data(), DType::f32);
}

TensorView GPT::master_parameters() { return TensorView(masters_.data(), DType::f32, {masters_count_}); }

TensorView GPT::gradients() { return TensorView(gradients_.data(), DType::f32, {layout_.total()}); }

TensorView GPT::working_parameters() {
    const TensorView arena = working_arena();
    return TensorView(arena.data, act_, {layout_.total()});
}

TensorView GPT::gradient_arena() { return TensorView(gradients_.data(), DType::f32, {arena_elements_}); }

TensorView GPT::working_arena() {
    if (working_.data() == nullptr) return TensorView(masters_.data(), DType::f32, {arena_elements_});
    return TensorView(working_.data(), act_, {arena_elements_});
}

void GPT::load_master_parameters(const float* host_values, int64_t count) {
    MIXGPT_REQUIRE(count == layout_.total(),
                   format("load_master_parameters: %lld values, the model has %lld",
                          static_cast<long long>(count), static_cast<long long>(layout_.total())));
    const ParameterView& wte = layout_.find("wte");
    for (int64_t i = int64_t{config_.vocab_size} * config_.n_embd; i < wte.numel; ++i)
        MIXGPT_REQUIRE(host_values[wte.offset + i] == 0.f,
                       "load_master_parameters: wte's padding rows (vocab_size and above) must be zero");
    if (keeps_all_masters()) {
        backend_.copy_to_backend(masters_.data(), host_values, static_cast<size_t>(count) * sizeof(float));
        refresh_working_copy();
        return;
    }
    // The pieces' masters one after another, zero in the padding; the working copy whole, rounded
    // on the host (to nearest even, as Backend::cast does).
    std::vector<float> kept(static_cast<size_t>(masters_count_), 0.f);
    size_t stored = 0;
    for (const ElementRange& piece : master_pieces_) {
        const int64_t real_end = std::min(piece.end, count);
        if (real_end > piece.begin)
            std::copy(host_values + piece.begin, host_values + real_end, kept.begin() + stored);
        stored += static_cast<size_t>(piece.count());
    }
    backend_.copy_to_backend(masters_.data(), kept.data(), kept.size() * sizeof(float));
    std::vector<char> working(static_cast<size_t>(count) * dtype_size(act_));
    convert_from_float(host_values, working.data(), act_, static_cast<size_t>(count));
    backend_.copy_to_backend(working_.data(), working.data(), working.size());
}

void GPT::refresh_working_copy() {
    if (keeps_all_masters()) {
        if (act_ != DType::f32) backend_.cast(working_parameters(), master_parameters());
        return;
    }
    const TensorView arena = working_arena();
    const TensorView masters = master_parameters();
    int64_t stored = 0;
    for (const ElementRange& piece : master_pieces_) {
        if (piece.count() == 0) continue;
        backend_.cast(slice_elements(arena, piece),
                      slice_elements(masters, {stored, stored + piece.count()}));
        stored += piece.count();
    }
}

void GPT::zero_gradients() { backend_.fill_zero(gradients_.data(), gradients_.bytes()); }

TensorView GPT::logits() {
    MIXGPT_REQUIRE(last_rows_ > 0, "logits: no forward pass has run yet");
    return activation("logits", 0, {last_rows_, last_length_, config_.padded_vocab_size()});
}

TensorView GPT::activation(const char* name, int layer, std::initializer_list<int64_t> dims) const {
    const ActivationBuffer& buffer = activation_layout_.find(name);
    const int copy = buffer.copies == 1 ? 0 : layer;
    auto* data = static_cast<char*>(activations_.data()) + buffer.offset +
                 buffer.copy_bytes * static_cast<size_t>(copy);
    TensorView view(data, buffer.dtype, dims);
    MIXGPT_REQUIRE(view.numel() <= buffer.elements,
                   std::string("activation view larger than buffer ") + name);
    return view;
}

GPT::BlockActivations GPT::block_activations(int layer, int64_t b, int64_t t) const {
    const int64_t N = b * t, C = config_.n_embd;
    BlockActivations a;
    a.residual_in = activation("residual", layer, {N, C});
    a.ln1 = activation("ln1", layer, {N, C});
    a.ln1_mean = activation("ln1_mean", layer, {N});
    a.ln1_rstd = activation("ln1_rstd", layer, {N});
    a.qkv = activation("qkv", layer, {b, t, 3 * C});
    a.attention = activation("attention", layer, {b, t, C});
    a.lse = activation("lse", layer, {b, config_.n_head, t});
    a.residual2 = activation("residual2", layer, {N, C});
    a.ln2 = activation("ln2", layer, {N, C});
    a.ln2_mean = activation("ln2_mean", layer, {N});
    a.ln2_rstd = activation("ln2_rstd", layer, {N});
    a.fc = activation("fc", layer, {N, 4 * C});
    a.fc_gelu = activation("fc_gelu", layer, {N, 4 * C});
    a.residual_out = activation("residual", layer + 1, {N, C});
    return a;
}

GPT::NextNorm GPT::next_norm(int layer, int64_t b, int64_t t) const {
    const int64_t N = b * t, C = config_.n_embd;
    if (layer + 1 < config_.n_layer) {
        const BlockTensors& next = weights_.blocks[static_cast<size_t>(layer + 1)];
        return {activation("ln1", layer + 1, {N, C}), activation("ln1_mean", layer + 1, {N}),
                activation("ln1_rstd", layer + 1, {N}), next.ln_1_weight, next.ln_1_bias};
    }
    return {activation("lnf", 0, {N, C}), activation("lnf_mean", 0, {N}), activation("lnf_rstd", 0, {N}),
            weights_.ln_f_weight, weights_.ln_f_bias};
}

void GPT::check_batch(const TensorView& tokens, const char* what) const {
    MIXGPT_REQUIRE(tokens.valid() && tokens.rank == 2 && tokens.dtype == DType::i32,
                   std::string(what) + ": expected a (b, t) tensor of int32");
    MIXGPT_REQUIRE(
        tokens.dim(0) >= 1 && tokens.dim(0) <= batch_size_ && tokens.dim(1) >= 1 && tokens.dim(1) <= seq_len_,
        format("%s: shape (%lld, %lld) is outside the model's (%d, %d)", what,
               static_cast<long long>(tokens.dim(0)), static_cast<long long>(tokens.dim(1)), batch_size_,
               seq_len_));
}

}  // namespace mixgpt
