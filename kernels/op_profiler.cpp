#include "kernels/op_profiler.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/log.h"

namespace mixgpt {

std::string matmul_label(const char* op, const TensorView& weight) {
    return format("%s %lldx%lld", op, static_cast<long long>(weight.dim(0)),
                  static_cast<long long>(weight.dim(1)));
}

template <typename Call>
void OpProfiler::timed(const std::string& op, Call&& call) {
    const bool asynchronous = inner_->cuda_stream() != nullptr;
    if (asynchronous) inner_->synchronize();
    const auto start = std::chrono::steady_clock::now();
    call();
    if (asynchronous) inner_->synchronize();
    OpTime& time = times_[op];
    time.op = op;
    time.calls += 1;
    time.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<OpTime> OpProfiler::times() const {
    std::vector<OpTime> sorted;
    for (const auto& entry : times_) sorted.push_back(entry.second);
    std::sort(sorted.begin(), sorted.end(),
              [](const OpTime& a, const OpTime& b) { return a.seconds > b.seconds; });
    return sorted;
}

void OpProfiler::copy_to_backend(void* destination, const void* host_source, size_t bytes) {
    timed("copy_to_backend", [&] { inner_->copy_to_backend(destination, host_source, bytes); });
}
void OpProfiler::copy_to_host(void* host_destination, const void* source, size_t bytes) {
    timed("copy_to_host", [&] { inner_->copy_to_host(host_destination, source, bytes); });
}
void OpProfiler::copy_within(void* destination, const void* source, size_t bytes) {
    timed("copy_within", [&] { inner_->copy_within(destination, source, bytes); });
}
void OpProfiler::fill_zero(void* destination, size_t bytes) {
    timed("fill_zero", [&] { inner_->fill_zero(destination, bytes); });
}

namespace {

// A call's argument as a TensorView, or null when it is something else.
const TensorView* as_tensor(const TensorView& argument) { return &argument; }
template <typename Other>
const TensorView* as_tensor(const Other&) {
    return nullptr;
}

// The profile's name of a call, CallLabel{op}(arguments...): the op's name, and for a matrix
// product its weight's shape too (the weight is the given tensor argument), so that a model's
// products show apart.
struct CallLabel {
    const char* op;

    template <typename... Arguments>
    std::string operator()(const Arguments&... arguments) const {
        static const std::pair<const char*, int> kWeightArgument[] = {
            {"matmul_forward", 3}, {"matmul_backward_input", 2}, {"matmul_backward_weight", 0}};
        const TensorView* tensors[] = {as_tensor(arguments)...};
        for (const auto& [name, index] : kWeightArgument) {
            if (std::strcmp(op, name) != 0) continue;
            int seen = 0;
            for (const TensorView* tensor : tensors)
                if (tensor != nullptr && seen++ == index) return matmul_label(op, *tensor);
        }
        return op;
    }
};

}  // namespace

#define MIXGPT_OP(name, parameters, arguments)                              \
    void OpProfiler::name parameters {                                      \
        timed(CallLabel{#name} arguments, [&] { inner_->name arguments; }); \
    }
#include "kernels/ops.def"

}  // namespace mixgpt
