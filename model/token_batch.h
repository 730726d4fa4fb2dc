// One batch of token windows moved to the backend as the model's inputs and targets.
//
// A window is T+1 consecutive tokens; the model reads tokens [0, T) and is scored on [1, T+1).
// The split is done in host staging memory (pinned on CUDA) and copied over in one transfer:
// the CUDA backend's next upload waits for the previous one to leave its bounce buffer, so a
// second transfer per batch would wait for all the work queued before the first.
// Token views are DType::i32.
#pragma once

#include <cstdint>

#include "core/memory.h"
#include "core/tensor.h"
#include "kernels/ops.h"

namespace mixgpt {

class TokenBatch {
public:
    TokenBatch(Backend& backend, int batch_size, int seq_len);

    // windows: (B, T+1) i32 on the host, row-major.
    void upload(const int32_t* windows);
    TensorView inputs() const;   // (B, T) i32, backend memory
    TensorView targets() const;  // (B, T) i32, backend memory

private:
    Backend& backend_;
    int batch_size_;
    int seq_len_;
    Buffer host_tokens_, tokens_;  // (2, B, T) i32: inputs, then targets
};

}  // namespace mixgpt
