#include "train/communicator.h"

#include "core/error.h"

namespace mixgpt {

void SingleProcessCommunicator::all_reduce_mean(TensorView values) {
    MIXGPT_REQUIRE(values.dtype == DType::f32,
                   "all_reduce_mean: expects f32 values, got " + std::string(dtype_name(values.dtype)));
}

void SingleProcessCommunicator::broadcast(TensorView, int root) {
    MIXGPT_REQUIRE(root == 0, "broadcast: root " + std::to_string(root) + " outside a world of 1 rank");
}

}  // namespace mixgpt
