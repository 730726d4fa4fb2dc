// The parameters of a model as named views into one contiguous fp32 arena, laid out from its
// family's description (model/family.h); the gradient arena (and the optimizer moments) use the
// same layout. Names come from the family (GPT-2's own: "wte", "h.0.attn.c_attn.weight", ...;
// Llama's: "token_embedding", "blocks.0.attention.qkv.weight", ...; interop/ maps them to Hugging
// Face's). Matrices are stored (out_features, in_features) like torch.nn.Linear; the token
// embedding and output head are (padded_vocab_size, n_embd) and their padding rows are always zero.
//
// Arena order: the decayed tensors first, so that weight decay applies to [0, decay_count): the
// model-level ones (in the family's order), then each block's; then the others: each block's,
// then the model-level ones. For GPT-2 that is wte, wpe, per block the four matrices, per block
// the norms and biases, ln_f: the order of mixgpt's first checkpoints.
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
    bool decay = false;  // weight decay applies
    Role role = Role::token_embedding;
    int layer = -1;  // the block it belongs to; -1: model-level
    Init init = Init::zeros;
    // Rows holding real values: vocab_size for the vocabulary-sized tensors (the rest is padding,
    // always zero), else shape[0].
    int64_t real_rows = 0;
};

class ParameterLayout {
public:
    explicit ParameterLayout(const GPTConfig& config);

    const std::vector<ParameterView>& views() const { return views_; }
    // Throws Error for an unknown name.
    const ParameterView& find(const std::string& name) const;
    // The tensor of `role` (in block `layer`, -1 for model-level roles); null when the family has none.
    const ParameterView* find(Role role, int layer = -1) const;
    int64_t total() const { return total_; }
    int64_t decay_count() const { return decay_count_; }

private:
    void add(const GPTConfig& config, const TensorSpec& spec, int layer);

    std::vector<ParameterView> views_;
    std::unordered_map<std::string, size_t> index_;
    int64_t total_ = 0;
    int64_t decay_count_ = 0;
};

// Initialization on the host by each tensor's Init (model/family.h): N(0, 0.02), the residual
// projections N(0, 0.02 / sqrt(2 n_layer)), norm weights 1, biases 0; the padding rows 0. Each
// value is a function of (seed, tensor index, element index) alone, so the result does not depend
// on the thread count.
std::vector<float> init_parameters(const GPTConfig& config, const ParameterLayout& layout, uint64_t seed);

}  // namespace mixgpt
