#include "model/parameters.h"

#include "core/error.h"

namespace mixgpt {

ParameterLayout::ParameterLayout(const GPTConfig& config) {
    config.validate();
    const Family& family = config.family();
    for (bool decayed : {true, false}) {
        const auto add_model_tensors = [&] {
            for (const TensorSpec& spec : family.model_tensors)
                if (spec.decay == decayed && config.holds(spec)) add(config, spec, -1);
        };
        if (decayed) add_model_tensors();
        for (int l = 0; l < config.n_layer; ++l)
            for (const TensorSpec& spec : family.block_tensors)
                if (spec.decay == decayed && config.holds(spec)) add(config, spec, l);
        if (!decayed) add_model_tensors();
        if (decayed) decay_count_ = total_;
    }
}

void ParameterLayout::add(const GPTConfig& config, const TensorSpec& spec, int layer) {
    ParameterView view;
    view.name = (layer >= 0 ? config.family().block_prefix + std::to_string(layer) + "." : std::string()) + spec.name;
    view.shape = {config.size_of(spec.rows)};
    if (spec.cols != Dim::none) view.shape.push_back(config.size_of(spec.cols));
    view.offset = total_;
    view.numel = config.size_of(spec.rows) * config.size_of(spec.cols);
    view.decay = spec.decay;
    view.role = spec.role;
    view.layer = layer;
    view.init = spec.init;
    view.real_rows = spec.rows == Dim::padded_vocab ? config.vocab_size : view.shape[0];
    index_[view.name] = views_.size();
    views_.push_back(std::move(view));
    total_ += views_.back().numel;
}

const ParameterView& ParameterLayout::find(const std::string& name) const {
    const auto found = index_.find(name);
    MIXGPT_REQUIRE(found != index_.end(), "no model parameter named '" + name + "'");
    return views_[found->second];
}

const ParameterView* ParameterLayout::find(Role role, int layer) const {
    for (const ParameterView& view : views_)
        if (view.role == role && view.layer == layer) return &view;
    return nullptr;
}

}  // namespace mixgpt
