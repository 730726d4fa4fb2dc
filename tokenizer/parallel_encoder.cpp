#include "tokenizer/parallel_encoder.h"

#include <omp.h>

#include <exception>

namespace mixgpt {

ParallelEncoder::ParallelEncoder(const Tokenizer& tokenizer, int threads) {
    const int count = threads > 0 ? threads : omp_get_max_threads();
    encoders_.reserve(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) encoders_.push_back(tokenizer.make_encoder());
}

size_t ParallelEncoder::encode(const std::vector<TextSegment>& segments,
                               std::vector<std::vector<int32_t>>& tokens) {
    tokens.resize(segments.size());
    const auto count = static_cast<int64_t>(segments.size());
    size_t invalid_bytes = 0;
    std::exception_ptr failure;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads()) reduction(+ : invalid_bytes)
    for (int64_t i = 0; i < count; ++i) {
        try {
            auto& out = tokens[static_cast<size_t>(i)];
            out.clear();
            invalid_bytes += encoders_[static_cast<size_t>(omp_get_thread_num())]->encode(
                segments[static_cast<size_t>(i)].text, out);
        } catch (...) {
#pragma omp critical(mixgpt_parallel_encoder_failure)
            if (!failure) failure = std::current_exception();
        }
    }
    if (failure) std::rethrow_exception(failure);
    return invalid_bytes;
}

}  // namespace mixgpt
