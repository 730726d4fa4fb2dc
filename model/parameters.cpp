#include "model/parameters.h"

#include "core/error.h"

namespace mixgpt {

ParameterLayout::ParameterLayout(const GPTConfig& config) {
    config.validate();
    const int64_t C = config.n_embd;
    add("wte", {config.padded_vocab_size(), C}, true);
    add("wpe", {config.max_seq_len, C}, true);
    for (int l = 0; l < config.n_layer; ++l) {
        const std::string h = "h." + std::to_string(l) + ".";
        add(h + "attn.c_attn.weight", {3 * C, C}, true);
        add(h + "attn.c_proj.weight", {C, C}, true);
        add(h + "mlp.c_fc.weight", {4 * C, C}, true);
        add(h + "mlp.c_proj.weight", {C, 4 * C}, true);
    }
    decay_count_ = total_;
    for (int l = 0; l < config.n_layer; ++l) {
        const std::string h = "h." + std::to_string(l) + ".";
        add(h + "ln_1.weight", {C}, false);
        add(h + "ln_1.bias", {C}, false);
        add(h + "attn.c_attn.bias", {3 * C}, false);
        add(h + "attn.c_proj.bias", {C}, false);
        add(h + "ln_2.weight", {C}, false);
        add(h + "ln_2.bias", {C}, false);
        add(h + "mlp.c_fc.bias", {4 * C}, false);
        add(h + "mlp.c_proj.bias", {C}, false);
    }
    add("ln_f.weight", {C}, false);
    add("ln_f.bias", {C}, false);
}

void ParameterLayout::add(const std::string& name, std::vector<int64_t> shape, bool decay) {
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    index_[name] = views_.size();
    views_.push_back({name, std::move(shape), total_, numel, decay});
    total_ += numel;
}

const ParameterView& ParameterLayout::find(const std::string& name) const {
    const auto found = index_.find(name);
    MIXGPT_REQUIRE(found != index_.end(), "no model parameter named '" + name + "'");
    return views_[found->second];
}

}  // namespace mixgpt
