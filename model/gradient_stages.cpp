#include "model/gradient_stages.h"

#include "core/error.h"

namespace mixgpt {
namespace {

// The stage that completes a tensor's gradient.
int stage_of(const ParameterView& view, int n_layer) {
    if (view.layer >= 0) {
        MIXGPT_REQUIRE(view.layer < n_layer, "gradient_stages: no block for parameter '" + view.name + "'");
        return n_layer - view.layer;
    }
    const bool embedding = view.role == Role::token_embedding || view.role == Role::position_embedding ||
                           view.role == Role::embedding_norm_weight || view.role == Role::embedding_norm_bias;
    return embedding ? n_layer + 1 : 0;
}

}  // namespace

std::vector<std::vector<size_t>> gradient_stages(const ParameterLayout& layout, int n_layer) {
    std::vector<std::vector<size_t>> stages(static_cast<size_t>(n_layer) + 2);
    const std::vector<ParameterView>& views = layout.views();
    for (size_t i = 0; i < views.size(); ++i)
        stages[static_cast<size_t>(stage_of(views[i], n_layer))].push_back(i);
    return stages;
}

}  // namespace mixgpt
