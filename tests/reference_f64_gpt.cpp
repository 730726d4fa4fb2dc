#include "tests/reference_f64_gpt.h"

#include "core/error.h"

namespace mixgpt {
namespace {

F64Vector add(const F64Vector& a, const F64Vector& b) {
    F64Vector sum(a.size());
    for (size_t i = 0; i < a.size(); ++i) sum[i] = a[i] + b[i];
    return sum;
}

void add_into(F64Vector& into, const F64Vector& values) {
    for (size_t i = 0; i < values.size(); ++i) into[i] += values[i];
}

// What one block's forward keeps for its backward, for N = B*T rows.
struct BlockState {
    F64Vector x;           // (N, C) the block's input
    F64Vector norm1;       // (N, C)
    F64Vector qkv_product; // (N, Q) the qkv product (before the QK-norm)
    F64Vector qkv;         // (N, Q) attention's input
    F64Vector attention;   // (N, C)
    F64Vector x_mid;       // (N, C) x + the attention branch
    F64Vector norm2;       // (N, C)
    F64Vector mlp_input;   // (N, M) before the activation
    F64Vector mlp_hidden;  // (N, D) after it
};

}  // namespace

F64Gpt::F64Gpt(const GPTConfig& config, const std::vector<float>& parameters)
    : config_(config), layout_(config), arena_(parameters.begin(), parameters.end()) {
    MIXGPT_REQUIRE(static_cast<int64_t>(parameters.size()) == layout_.total(), "F64Gpt: wrong parameter count");
}

F64Vector F64Gpt::parameter(Role role, int layer) const {
    const ParameterView* view = layout_.find(role, layer);
    if (view == nullptr) return {};
    const auto begin = arena_.begin() + view->offset;
    return F64Vector(begin, begin + view->numel);
}

void F64Gpt::accumulate(F64Vector& gradients, Role role, int layer, const F64Vector& gradient) const {
    const ParameterView* view = layout_.find(role, layer);
    MIXGPT_REQUIRE(view != nullptr && static_cast<int64_t>(gradient.size()) == view->numel,
                   "F64Gpt: a gradient without its parameter");
    for (int64_t i = 0; i < view->numel; ++i) gradients[static_cast<size_t>(view->offset + i)] += gradient[i];
}

AttentionParams F64Gpt::attention_params() const {
    const bool rotary = config_.family().positions == PositionKind::rotary;
    return {config_.n_head, config_.kv_heads(), rotary ? config_.rope_theta : 0.f};
}

F64Vector F64Gpt::norm_parameter(Role role, int layer, double parameter_free) const {
    const F64Vector values = parameter(role, layer);
    return values.empty() ? F64Vector(static_cast<size_t>(config_.n_embd), parameter_free) : values;
}

F64Gpt::Norm F64Gpt::norm_forward(const F64Vector& inp, Role weight, int layer, int N) const {
    const int C = config_.n_embd;
    if (config_.family().norm == NormKind::layernorm) {
        // The bias is the role after the weight in model/family.h's list.
        const Role bias = static_cast<Role>(static_cast<int>(weight) + 1);
        F64LayerNormForward ln =
            f64_layernorm_forward(inp, norm_parameter(weight, layer, 1.0), norm_parameter(bias, layer, 0.0), N, C);
        return {std::move(ln.out), std::move(ln.rstd)};
    }
    F64RmsNormForward rms = f64_rmsnorm_forward(inp, norm_parameter(weight, layer, 1.0), N, C, config_.norm_epsilon);
    return {std::move(rms.out), std::move(rms.rstd)};
}

F64Vector F64Gpt::norm_backward(F64Vector& gradients, const F64Vector& dout, const F64Vector& inp, Role weight,
                                int layer, int N) const {
    const int C = config_.n_embd;
    const bool has_weights = config_.norm_weights;  // else parameter-free: no gradients to add
    if (config_.family().norm == NormKind::layernorm) {
        F64LayerNormBackward ln = f64_layernorm_backward(dout, inp, norm_parameter(weight, layer, 1.0), N, C);
        if (has_weights) {
            accumulate(gradients, weight, layer, ln.dweight);
            accumulate(gradients, static_cast<Role>(static_cast<int>(weight) + 1), layer, ln.dbias);
        }
        return std::move(ln.dinp);
    }
    F64RmsNormBackward rms =
        f64_rmsnorm_backward(dout, inp, norm_parameter(weight, layer, 1.0), N, C, config_.norm_epsilon);
    if (has_weights) accumulate(gradients, weight, layer, rms.dweight);
    return std::move(rms.dinp);
}

F64Vector F64Gpt::losses(const std::vector<int32_t>& tokens, const std::vector<int32_t>& targets) const {
    const int T = static_cast<int>(tokens.size());
    MIXGPT_REQUIRE(T >= 1 && T <= config_.max_seq_len && targets.size() == tokens.size(), "F64Gpt: bad sequence");
    return forward_backward(tokens, targets, 1, T).losses;
}

F64Gpt::Pass F64Gpt::forward_backward(const std::vector<int32_t>& tokens, const std::vector<int32_t>& targets,
                                      int B, int T, double z_loss) const {
    const int N = B * T, C = config_.n_embd, Vp = config_.padded_vocab_size(), hd = config_.head_dim();
    const int Q = static_cast<int>(config_.size_of(Dim::qkv)), M = static_cast<int>(config_.size_of(Dim::mlp_input));
    const int D = static_cast<int>(config_.size_of(Dim::mlp_hidden));
    const MlpKind mlp = config_.mlp_kind();
    const bool gelu = mlp == MlpKind::gelu;
    MIXGPT_REQUIRE(T >= 1 && T <= config_.max_seq_len && tokens.size() == static_cast<size_t>(N) &&
                       targets.size() == tokens.size(),
                   "F64Gpt: bad batch");
    const AttentionParams attention = attention_params();
    // Layer l's attention: the sliding window where config.window_pattern's letter for it (cycled) is
    // S, or every layer without a pattern.
    const auto layer_attention = [&](int l) {
        AttentionParams layer = attention;
        const std::string pattern = config_.window_pattern_text();
        const bool windowed = pattern.empty() || pattern[static_cast<size_t>(l) % pattern.size()] == 'S';
        layer.window = windowed ? config_.attention_window : 0;
        return layer;
    };
    const Role head_role = layout_.find(Role::output_head) != nullptr ? Role::output_head : Role::token_embedding;

    // Forward, keeping each block's state.
    // The document mask (config.document_separator), as document numbers: empty under the causal one;
    // --positions document: each token's place in its document, for the learned positions and RoPE
    // alike (empty: t).
    const std::vector<int> documents = config_.document_separator >= 0
                                           ? f64_document_numbers(tokens, B, T, config_.document_separator)
                                           : std::vector<int>();
    const std::vector<int> places = config_.document_positions
                                        ? f64_document_positions(tokens, B, T, config_.document_separator)
                                        : std::vector<int>();
    F64Vector positions = parameter(Role::position_embedding);
    if (positions.empty()) positions.assign(static_cast<size_t>(config_.max_seq_len) * C, 0.0);
    F64Vector x =
        f64_embedding_forward(tokens, parameter(Role::token_embedding), positions, B, T, C, places);  // (N, C)
    const F64Vector embedded = x;  // the embedding norm's input
    if (config_.embedding_norm) x = norm_forward(embedded, Role::embedding_norm_weight, -1, N).out;
    std::vector<BlockState> blocks(static_cast<size_t>(config_.n_layer));
    for (int l = 0; l < config_.n_layer; ++l) {
        BlockState& s = blocks[static_cast<size_t>(l)];
        s.x = x;
        s.norm1 = norm_forward(x, Role::attention_norm_weight, l, N).out;
        s.qkv_product = f64_matmul_forward(s.norm1, parameter(Role::qkv_weight, l), parameter(Role::qkv_bias, l), N,
                                           C, Q, false)
                            .out;
        s.qkv = config_.qk_norm ? f64_qk_norm_forward(s.qkv_product, N, config_.n_head, config_.kv_heads(), hd,
                                                      config_.norm_epsilon)
                                      .qkv
                                : s.qkv_product;
        s.attention = f64_attention_forward(s.qkv, B, T, hd, layer_attention(l), 0, documents, places).out;
        s.x_mid = add(x, f64_matmul_forward(s.attention, parameter(Role::attention_output_weight, l),
                                            parameter(Role::attention_output_bias, l), N, C, C, false)
                             .out);
        s.norm2 = norm_forward(s.x_mid, Role::mlp_norm_weight, l, N).out;
        F64MatmulForward input = f64_matmul_forward(s.norm2, parameter(Role::mlp_input_weight, l),
                                                    parameter(Role::mlp_input_bias, l), N, C, M, gelu);
        if (gelu) {
            s.mlp_input = std::move(input.pre_gelu);
            s.mlp_hidden = std::move(input.out);
        } else {
            s.mlp_input = std::move(input.out);
            s.mlp_hidden = mlp == MlpKind::swiglu ? f64_swiglu_forward(s.mlp_input, N, D) : f64_relu2_forward(s.mlp_input);
        }
        x = add(s.x_mid, f64_matmul_forward(s.mlp_hidden, parameter(Role::mlp_output_weight, l),
                                            parameter(Role::mlp_output_bias, l), N, D, C, false)
                             .out);
    }
    const F64Vector final_norm = norm_forward(x, Role::final_norm_weight, -1, N).out;
    const F64Vector head = parameter(head_role);
    const F64Vector logits = f64_matmul_forward(final_norm, head, {}, N, C, Vp, false).out;  // (N, Vp)
    F64Classifier classifier = f64_classifier(logits, targets, N, Vp, config_.vocab_size, 1.0 / N, 1.0,
                                              config_.logit_softcap, z_loss);

    // Backward.
    F64Vector gradients(arena_.size(), 0.0);
    accumulate(gradients, head_role, -1, f64_matmul_backward_weight(classifier.dlogits, final_norm, N, C, Vp).dweight);
    F64Vector dx = norm_backward(gradients, f64_matmul_backward_input(classifier.dlogits, head, N, C, Vp), x,
                                 Role::final_norm_weight, -1, N);
    for (int l = config_.n_layer - 1; l >= 0; --l) {
        const BlockState& s = blocks[static_cast<size_t>(l)];
        const auto weight_gradients = [&](Role weight, Role bias, const F64Vector& dout, const F64Vector& inp,
                                          int K, int out_features) {
            F64MatmulWeightGradient g = f64_matmul_backward_weight(dout, inp, N, K, out_features);
            accumulate(gradients, weight, l, g.dweight);
            if (layout_.find(bias, l) != nullptr) accumulate(gradients, bias, l, g.dbias);
        };
        // MLP: x = x_mid + hidden · W_out^T (+ b)
        weight_gradients(Role::mlp_output_weight, Role::mlp_output_bias, dx, s.mlp_hidden, D, C);
        const F64Vector dhidden = f64_matmul_backward_input(dx, parameter(Role::mlp_output_weight, l), N, D, C);
        const F64Vector dinput = gelu                     ? f64_gelu_backward(dhidden, s.mlp_input)
                                 : mlp == MlpKind::swiglu ? f64_swiglu_backward(dhidden, s.mlp_input, N, D)
                                                          : f64_relu2_backward(dhidden, s.mlp_input);
        weight_gradients(Role::mlp_input_weight, Role::mlp_input_bias, dinput, s.norm2, C, M);
        add_into(dx, norm_backward(gradients, f64_matmul_backward_input(dinput, parameter(Role::mlp_input_weight, l),
                                                                        N, C, M),
                                   s.x_mid, Role::mlp_norm_weight, l, N));
        // Attention: x_mid = x + attention · W_o^T (+ b)
        weight_gradients(Role::attention_output_weight, Role::attention_output_bias, dx, s.attention, C, C);
        const F64Vector dattention =
            f64_matmul_backward_input(dx, parameter(Role::attention_output_weight, l), N, C, C);
        F64Vector dqkv =
            f64_attention_backward(dattention, s.qkv, B, T, hd, layer_attention(l), documents, places);
        if (config_.qk_norm)
            dqkv = f64_qk_norm_backward(dqkv, s.qkv_product, N, config_.n_head, config_.kv_heads(), hd,
                                        config_.norm_epsilon);
        weight_gradients(Role::qkv_weight, Role::qkv_bias, dqkv, s.norm1, C, Q);
        add_into(dx, norm_backward(gradients, f64_matmul_backward_input(dqkv, parameter(Role::qkv_weight, l), N, C, Q),
                                   s.x, Role::attention_norm_weight, l, N));
    }
    if (config_.embedding_norm) dx = norm_backward(gradients, dx, embedded, Role::embedding_norm_weight, -1, N);
    F64Vector dtokens(static_cast<size_t>(Vp) * C, 0.0), dpositions(positions.size(), 0.0);
    f64_embedding_backward(dtokens, dpositions, dx, tokens, B, T, C, places);
    accumulate(gradients, Role::token_embedding, -1, dtokens);
    if (layout_.find(Role::position_embedding) != nullptr)
        accumulate(gradients, Role::position_embedding, -1, dpositions);
    return {std::move(classifier.losses), std::move(classifier.z_losses), std::move(gradients)};
}

}  // namespace mixgpt
