#include "dist/communicator.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/error.h"
#include "core/log.h"
#include "core/process_identity.h"

namespace mixgpt {

void require_f32(const TensorView& values, const char* collective) {
    MIXGPT_REQUIRE(values.dtype == DType::f32,
                   std::string(collective) + ": expects f32 values, got " + dtype_name(values.dtype));
    MIXGPT_REQUIRE(values.rank == 1,
                   std::string(collective) + ": expects a 1-D view, got " + values.shape_string());
}

int64_t require_blocks(const TensorView& values, int world_size, const char* collective) {
    MIXGPT_REQUIRE(values.rank == 1,
                   std::string(collective) + ": expects a 1-D view, got " + values.shape_string());
    MIXGPT_REQUIRE(values.numel() % world_size == 0,
                   format("%s: %lld elements do not split into %d equal blocks (pad them)", collective,
                          static_cast<long long>(values.numel()), world_size));
    return values.numel() / world_size;
}

void require_root(int root, int world_size, const char* collective) {
    MIXGPT_REQUIRE(root >= 0 && root < world_size, std::string(collective) + ": root " +
                                                       std::to_string(root) + " outside a world of " +
                                                       std::to_string(world_size) + " ranks");
}

std::string SingleProcessCommunicator::describe() const { return "host " + host_name(); }

void SingleProcessCommunicator::all_reduce(TensorView values, Reduction) {
    require_f32(values, "all_reduce");
}

void SingleProcessCommunicator::reduce_scatter_mean(TensorView values) {
    require_f32(values, "reduce_scatter_mean");
    require_blocks(values, 1, "reduce_scatter_mean");
}

void SingleProcessCommunicator::all_gather(TensorView values) { require_blocks(values, 1, "all_gather"); }

void SingleProcessCommunicator::broadcast_host(void*, size_t, int root) {
    require_root(root, 1, "broadcast");
}

void SingleProcessCommunicator::gather_host(const float* part, float* whole,
                                            const std::vector<int64_t>& counts, int root) {
    require_root(root, 1, "gather");
    MIXGPT_REQUIRE(counts.size() == 1 && counts[0] >= 0, "gather: expects one segment count for 1 rank");
    if (part != whole) std::memmove(whole, part, static_cast<size_t>(counts[0]) * sizeof(float));
}

}  // namespace mixgpt
