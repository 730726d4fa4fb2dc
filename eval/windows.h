// Evaluation windows over a token stream, non-overlapping or sliding.
//
// With context T and stride S (1 <= S <= T), window j starts at token j*S and holds the T+1
// tokens [j*S, j*S + T + 1) (inputs T, targets T). Window 0 scores all T targets; every later
// window scores only its last S targets, the ones no earlier window scored, so each scored token
// is predicted once, with at least T - S tokens of context (except near the start). Windows are
// formed while they fit in the stream. With S = T these are exactly the data loader's eval
// windows: W = floor((N - 1) / T), window i = tokens [i*T, i*T + T + 1).
#pragma once

#include <cstdint>
#include <vector>

namespace mixgpt {

struct EvalWindow {
    int64_t start = 0;     // first token of the window
    int first_scored = 0;  // targets at window positions [first_scored, T) count
};

// The number of windows over `token_count` tokens (0 when fewer than T + 1), and window j.
int64_t stride_window_count(int64_t token_count, int seq_len, int stride);
EvalWindow stride_window(int64_t index, int seq_len, int stride);

// All windows at once. Throws Error when the stream has fewer than T + 1 tokens or the stride is
// outside [1, T].
std::vector<EvalWindow> plan_windows(int64_t token_count, int seq_len, int stride);

}  // namespace mixgpt
