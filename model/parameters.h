// The parameters of a GPT as named views into one contiguous fp32 arena; the
// gradient arena (and the optimizer moments) use the same layout. Names follow
// GPT-2's ("wte", "h.0.attn.c_attn.weight", ...), so export is a mapping.
// Matrices are stored (out_features, in_features) like torch.nn.Linear;
// wte is (padded_vocab_size, n_embd) and its padding rows are always zero.
//
// Arena order: the 2-D (weight-decayed) tensors first, so decay applies to
// [0, decay_count): wte, wpe, then per layer c_attn.weight, attn.c_proj.weight,
// c_fc.weight, mlp.c_proj.weight; then the 1-D tensors: per layer ln_1.weight,
// ln_1.bias, c_attn.bias, attn.c_proj.bias, ln_2.weight, ln_2.bias, c_fc.bias,
// mlp.c_proj.bias; then ln_f.weight, ln_f.bias.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/config.h"

namespace mixgpt {

struct ParameterView {
    std::string name;
    std::vector<int64_t> shape;
    int64_t offset = 0;  // elements from the start of the arena
    int64_t numel = 0;
    bool decay = false;  // weight decay applies (2-D tensors)
};

class ParameterLayout {
public:
    explicit ParameterLayout(const GPTConfig& config);

    const std::vector<ParameterView>& views() const { return views_; }
    // Throws Error for an unknown name.
    const ParameterView& find(const std::string& name) const;
    int64_t total() const { return total_; }
    int64_t decay_count() const { return decay_count_; }

private:
    void add(const std::string& name, std::vector<int64_t> shape, bool decay);

    std::vector<ParameterView> views_;
    std::unordered_map<std::string, size_t> index_;
    int64_t total_ = 0;
    int64_t decay_count_ = 0;
};

// GPT-2 initialization on the host: weights N(0, 0.02), the residual output projections
// (attn.c_proj.weight, mlp.c_proj.weight) N(0, 0.02 / sqrt(2 n_layer)), biases 0, LayerNorm
// weights 1, wte's padding rows 0. Each value is a function of (seed, tensor, index) alone,
// so the result does not depend on the thread count.
std::vector<float> init_gpt2_parameters(const GPTConfig& config, const ParameterLayout& layout,
                                        uint64_t seed);

}  // namespace mixgpt
