#include "model/gradient_stages.h"

#include <string>

#include "core/error.h"

namespace mixgpt {
namespace {

// The stage that completes a tensor's gradient, from its name.
int stage_of(const std::string& name, int n_layer) {
    if (name == "ln_f.weight" || name == "ln_f.bias") return 0;
    if (name == "wte" || name == "wpe") return n_layer + 1;
    MIXGPT_REQUIRE(name.rfind("h.", 0) == 0, "gradient_stages: unexpected parameter '" + name + "'");
    const int layer = std::stoi(name.substr(2));
    MIXGPT_REQUIRE(layer >= 0 && layer < n_layer, "gradient_stages: no block for parameter '" + name + "'");
    return n_layer - layer;
}

}  // namespace

std::vector<std::vector<size_t>> gradient_stages(const ParameterLayout& layout, int n_layer) {
    std::vector<std::vector<size_t>> stages(static_cast<size_t>(n_layer) + 2);
    const std::vector<ParameterView>& views = layout.views();
    for (size_t i = 0; i < views.size(); ++i)
        stages[static_cast<size_t>(stage_of(views[i].name, n_layer))].push_back(i);
    return stages;
}

}  // namespace mixgpt
