// Construction, parameter memory and activation views of the GPT.
#include "model/gpt.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"

namespace mixgpt {

GPT::GPT(Backend& backend, const GPTConfig& config, int batch_size, int seq_len, Recompute recompute,
         ParameterSharding sharding, const Fp8Options& fp8)
    : backend_(backend),
      config_(config),
      family_(config.family()),
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
    weights_ = ModelTensors(layout_, config_.n_layer, working_parameters().data, act_);
    grads_ = ModelTensors(layout_, config_.n_layer, gradients_.data(), DType::f32);
    if (backend_.precision() == Precision::fp8) fp8_ = std::make_unique<Fp8Linears>(backend_, fp8, config_.n_layer);
    if (config_.document_separator >= 0) {
        const auto rows = static_cast<size_t>(batch_size) * static_cast<size_t>(seq_len);
        const size_t positions = weights_[Role::position_embedding].valid() && config_.document_positions ? rows : 0;
        documents_ =
            backend_.allocate((3 * rows + static_cast<size_t>(batch_size) + positions) * sizeof(int32_t));
        backend_.fill_zero(documents_.data(), documents_.bytes());
    }
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
    for (const ParameterView& view : layout_.views())
        for (int64_t i = view.real_rows * (view.numel / view.shape[0]); i < view.numel; ++i)
            MIXGPT_REQUIRE(host_values[view.offset + i] == 0.f,
                           "load_master_parameters: the padding rows (vocab_size and above) of " + view.name +
                               " must be zero");
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

void GPT::set_z_loss(float z_loss) {
    MIXGPT_REQUIRE(std::isfinite(z_loss) && z_loss >= 0, "z-loss: must be a finite number >= 0 (0: off)");
    z_loss_ = z_loss;
}

TensorView GPT::z_losses() {
    MIXGPT_REQUIRE(z_loss_ > 0 && last_rows_ > 0, "z_losses: no forward_backward under a z-loss has run yet");
    return activation(Activation::z_losses, 0, {last_rows_, last_length_});
}

TensorView GPT::logits() {
    MIXGPT_REQUIRE(last_rows_ > 0, "logits: no forward pass has run yet");
    return activation(Activation::logits, 0, {last_rows_, last_length_, config_.padded_vocab_size()});
}

TensorView GPT::activation(Activation name, int layer, std::initializer_list<int64_t> dims) const {
    const ActivationBuffer& buffer = activation_layout_[name];
    MIXGPT_REQUIRE(buffer.copies > 0, std::string("activation ") + activation_name(name) +
                                          " is not kept for architecture " + family_.name);
    const int copy = buffer.copies == 1 ? 0 : layer;
    auto* data = static_cast<char*>(activations_.data()) + buffer.offset +
                 buffer.copy_bytes * static_cast<size_t>(copy);
    TensorView view(data, buffer.dtype, dims);
    MIXGPT_REQUIRE(view.numel() <= buffer.elements,
                   std::string("activation view larger than buffer ") + activation_name(name));
    return view;
}

GPT::BlockActivations GPT::block_activations(int layer, int64_t b, int64_t t) const {
    const int64_t N = b * t, C = config_.n_embd;
    const bool has_mean = family_.norm == NormKind::layernorm;
    const auto norm_views = [&](Activation out, Activation mean, Activation rstd, int copy) {
        return NormViews{activation(out, copy, {N, C}), has_mean ? activation(mean, copy, {N}) : TensorView(),
                         activation(rstd, copy, {N})};
    };
    BlockActivations a;
    a.residual_in = activation(Activation::residual, layer, {N, C});
    a.attention_norm = norm_views(Activation::attention_norm, Activation::attention_norm_mean,
                                  Activation::attention_norm_rstd, layer);
    a.qkv = activation(Activation::qkv, layer, {b, t, config_.size_of(Dim::qkv)});
    a.attention = activation(Activation::attention, layer, {b, t, C});
    a.lse = activation(Activation::lse, layer, {b, config_.n_head, t});
    if (config_.qk_norm)
        a.qk_norm_rstd = activation(Activation::qk_norm_rstd, layer, {b, t, config_.n_head + config_.kv_heads()});
    a.attention_residual = activation(Activation::attention_residual, layer, {N, C});
    a.mlp_norm = norm_views(Activation::mlp_norm, Activation::mlp_norm_mean, Activation::mlp_norm_rstd, layer);
    a.mlp_input = activation(Activation::mlp_input, layer, {N, config_.size_of(Dim::mlp_input)});
    a.mlp_hidden = activation(Activation::mlp_hidden, layer, {N, config_.size_of(Dim::mlp_hidden)});
    a.residual_out = activation(Activation::residual, layer + 1, {N, C});
    return a;
}

GPT::NextNorm GPT::next_norm(int layer, int64_t b, int64_t t) const {
    if (layer + 1 < config_.n_layer)
        return {block_activations(layer + 1, b, t).attention_norm,
                weights_.block(layer + 1, Role::attention_norm_weight),
                weights_.block(layer + 1, Role::attention_norm_bias)};
    const int64_t N = b * t;
    const bool has_mean = family_.norm == NormKind::layernorm;
    return {{activation(Activation::final_norm, 0, {N, config_.n_embd}),
             has_mean ? activation(Activation::final_norm_mean, 0, {N}) : TensorView(),
             activation(Activation::final_norm_rstd, 0, {N})},
            weights_[Role::final_norm_weight],
            weights_[Role::final_norm_bias]};
}

GPT::NormViews GPT::embedding_norm_views(int64_t N) const {
    const bool has_mean = family_.norm == NormKind::layernorm;
    return {activation(Activation::residual, 0, {N, config_.n_embd}),
            has_mean ? activation(Activation::embedding_norm_mean, 0, {N}) : TensorView(),
            activation(Activation::embedding_norm_rstd, 0, {N})};
}

AttentionParams GPT::attention_params(int layer, int64_t b, int64_t t, bool decoding) const {
    AttentionParams params{config_.n_head, config_.kv_heads(),
                           family_.positions == PositionKind::rotary ? config_.rope_theta : 0.f};
    params.window = config_.window_of(layer);
    if (documents_.empty()) return params;
    auto* bounds = static_cast<int32_t*>(documents_.data());
    const int64_t rows = int64_t{batch_size_} * seq_len_;
    if (decoding) {
        params.document_starts = TensorView(bounds + 2 * rows, DType::i32, {b, t});
    } else {
        params.document_starts = TensorView(bounds, DType::i32, {b, t});
        params.document_ends = TensorView(bounds + rows, DType::i32, {b, t});
    }
    return params;
}

void GPT::find_documents(TensorView tokens, int cache_position) {
    if (documents_.empty()) return;
    const int64_t b = tokens.dim(0), t = tokens.dim(1), rows = int64_t{batch_size_} * seq_len_;
    auto* bounds = static_cast<int32_t*>(documents_.data());
    if (cache_position < 0) {
        const AttentionParams params = attention_params(0, b, t, false);
        backend_.document_bounds(params.document_starts, params.document_ends, tokens,
                                 config_.document_separator);
    } else {
        backend_.document_starts_decoding(attention_params(0, b, t, true).document_starts,
                                          TensorView(bounds + 3 * rows, DType::i32, {b}), tokens,
                                          cache_position, config_.document_separator);
    }
    const TensorView positions = document_positions(b, t);
    if (positions.valid())
        backend_.document_positions(positions, attention_params(0, b, t, cache_position >= 0).document_starts,
                                    cache_position < 0 ? 0 : cache_position);
}

TensorView GPT::document_positions(int64_t b, int64_t t) const {
    if (documents_.empty() || !config_.document_positions || !weights_[Role::position_embedding].valid())
        return TensorView();
    const int64_t rows = int64_t{batch_size_} * seq_len_;
    return TensorView(static_cast<int32_t*>(documents_.data()) + 3 * rows + batch_size_, DType::i32, {b, t});
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
