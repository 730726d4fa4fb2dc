#include "train/parameter_groups.h"

#include "core/error.h"

namespace mixgpt {
namespace {

bool is_hidden_matrix(Role role) {
    return role == Role::qkv_weight || role == Role::attention_output_weight ||
           role == Role::mlp_input_weight || role == Role::mlp_output_weight;
}

AdamWRate rate_of(Role role) {
    if (role == Role::token_embedding || role == Role::position_embedding) return AdamWRate::embedding;
    if (role == Role::output_head) return AdamWRate::head;
    return AdamWRate::base;
}

// The matrices a block tensor holds, as (suffix, rows) parts of its rows, in order.
std::vector<std::pair<std::string, int64_t>> parts_of(const GPTConfig& config, const ParameterView& view) {
    if (view.role == Role::qkv_weight) {
        const int64_t hd = config.head_dim();
        return {
            {"[q]", config.n_head * hd}, {"[k]", config.kv_heads() * hd}, {"[v]", config.kv_heads() * hd}};
    }
    if (view.role == Role::mlp_input_weight && config.mlp_kind() == MlpKind::swiglu)
        return {{"[gate]", config.mlp_hidden()}, {"[up]", config.mlp_hidden()}};
    return {{"", view.shape[0]}};
}

}  // namespace

ParameterGroups muon_parameter_groups(const GPTConfig& config, const ParameterLayout& layout) {
    ParameterGroups groups;
    for (const ParameterView& view : layout.views()) {
        if (view.layer >= 0 && is_hidden_matrix(view.role)) {
            MIXGPT_REQUIRE(view.shape.size() == 2, "muon: " + view.name + " is not a matrix");
            int64_t offset = view.offset;
            for (const auto& [suffix, rows] : parts_of(config, view)) {
                groups.muon.push_back({view.name + suffix, offset, rows, view.shape[1]});
                offset += rows * view.shape[1];
            }
            MIXGPT_REQUIRE(offset == view.offset + view.numel,
                           "muon: the parts of " + view.name + " do not add up to its shape");
            continue;
        }
        const AdamWRate rate = rate_of(view.role);
        if (!groups.adamw.empty() && groups.adamw.back().end == view.offset &&
            groups.adamw.back().rate == rate && groups.adamw.back().decay == view.decay) {
            groups.adamw.back().end += view.numel;
            continue;
        }
        groups.adamw.push_back({view.offset, view.offset + view.numel, rate, view.decay});
    }
    return groups;
}

}  // namespace mixgpt
