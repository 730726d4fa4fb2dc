#include "eval/windows.h"

#include <string>

#include "core/error.h"

namespace mixgpt {

std::vector<EvalWindow> plan_windows(int64_t token_count, int seq_len, int stride) {
    MIXGPT_REQUIRE(seq_len >= 1, "seq-len: must be at least 1");
    MIXGPT_REQUIRE(stride >= 1 && stride <= seq_len,
                   "stride: must lie in [1, seq-len = " + std::to_string(seq_len) + "]");
    MIXGPT_REQUIRE(token_count >= seq_len + 1, "the text has " + std::to_string(token_count) +
                                                   " tokens, fewer than seq-len + 1 = " +
                                                   std::to_string(seq_len + 1) + " needed for one window");
    std::vector<EvalWindow> windows;
    for (int64_t j = 0; j < stride_window_count(token_count, seq_len, stride); ++j)
        windows.push_back(stride_window(j, seq_len, stride));
    return windows;
}

int64_t stride_window_count(int64_t token_count, int seq_len, int stride) {
    return token_count >= seq_len + 1 ? (token_count - seq_len - 1) / stride + 1 : 0;
}

EvalWindow stride_window(int64_t index, int seq_len, int stride) {
    return {index * stride, index == 0 ? 0 : seq_len - stride};
}

}  // namespace mixgpt
