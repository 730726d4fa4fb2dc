#include "model/token_batch.h"

#include <algorithm>

namespace mixgpt {

TokenBatch::TokenBatch(Backend& backend, int batch_size, int seq_len)
    : backend_(backend), batch_size_(batch_size), seq_len_(seq_len) {
    const size_t bytes = 2 * static_cast<size_t>(batch_size) * static_cast<size_t>(seq_len) * sizeof(int32_t);
    host_tokens_ = backend.allocate_host_staging(bytes);
    tokens_ = backend.allocate(bytes);
}

void TokenBatch::upload(const int32_t* windows) {
    const size_t t = static_cast<size_t>(seq_len_), rows = static_cast<size_t>(batch_size_);
    int32_t* inputs = host_tokens_.as<int32_t>();
    int32_t* targets = inputs + rows * t;
    for (size_t row = 0; row < rows; ++row) {
        const int32_t* window = windows + row * (t + 1);
        std::copy(window, window + t, inputs + row * t);
        std::copy(window + 1, window + t + 1, targets + row * t);
    }
    backend_.copy_to_backend(tokens_.data(), host_tokens_.data(), host_tokens_.bytes());
}

TensorView TokenBatch::inputs() const {
    return TensorView(tokens_.data(), DType::i32, {batch_size_, seq_len_});
}

TensorView TokenBatch::targets() const {
    return TensorView(tokens_.as<int32_t>() + int64_t{batch_size_} * seq_len_, DType::i32,
                      {batch_size_, seq_len_});
}

}  // namespace mixgpt
