// The order in which the backward pass completes the parameter gradients, so that gradient
// communication can start on the first ones while the backward pass computes the rest.
//
// The backward pass runs in stages and calls GradientsReady with a stage's index once the last
// op adding to that stage's gradients is enqueued on the backend:
//   stage 0          the final norm and an untied output head
//   stage 1 + i      every tensor of block n_layer - 1 - i (the last block first)
//   stage n_layer+1  the token and position embeddings (the token embedding, when tied to the
//                    output head, also receives the classifier's gradient at the very start of
//                    the backward pass)
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "model/parameters.h"

namespace mixgpt {

// Called with stages 0, 1, ..., n_layer + 1, in that order, during one backward pass.
using GradientsReady = std::function<void(int stage)>;

// For each stage in order, the indices into layout.views() of the tensors it completes; every
// tensor appears in exactly one stage.
std::vector<std::vector<size_t>> gradient_stages(const ParameterLayout& layout, int n_layer);

}  // namespace mixgpt
