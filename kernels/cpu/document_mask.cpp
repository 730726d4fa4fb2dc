// Document bounds of the document mask (kernels/ops.def, document_bounds and
// document_starts_decoding): one pass along each row, rows in parallel; and the positions within
// documents of --positions document (document_positions).
#include <cstdint>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/tensor_checks.h"

namespace mixgpt::cpu {

void CpuBackend::document_bounds(TensorView starts, TensorView ends, TensorView tokens, int separator) {
    const char* op = "document_bounds";
    require_rank(tokens, DType::i32, 2, op, "tokens");
    const int64_t B = tokens.dim(0), T = tokens.dim(1);
    require_int32(starts, {B, T}, op, "starts");
    require_int32(ends, {B, T}, op, "ends");
    const int32_t* token = tokens.as<const int32_t>();
    int32_t* start = starts.as<int32_t>();
    int32_t* end = ends.as<int32_t>();
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < B; ++b) {
        const int64_t row = b * T;
        int32_t open = 0;  // where the current document starts
        for (int64_t t = 0; t < T; ++t) {
            start[row + t] = open;
            if (token[row + t] == separator) open = static_cast<int32_t>(t + 1);
        }
        int32_t close = static_cast<int32_t>(T);  // one past the current document's last position
        for (int64_t t = T - 1; t >= 0; --t) {
            if (token[row + t] == separator) close = static_cast<int32_t>(t + 1);
            end[row + t] = close;
        }
    }
}

void CpuBackend::document_starts_decoding(TensorView starts, TensorView open, TensorView tokens, int position,
                                          int separator) {
    const char* op = "document_starts_decoding";
    require_rank(tokens, DType::i32, 2, op, "tokens");
    const int64_t B = tokens.dim(0), Tn = tokens.dim(1);
    require_int32(starts, {B, Tn}, op, "starts");
    require_int32(open, {B}, op, "open");
    require(position >= 0, op, "position must not be negative");
    const int32_t* token = tokens.as<const int32_t>();
    int32_t* start = starts.as<int32_t>();
    int32_t* next = open.as<int32_t>();
    for (int64_t b = 0; b < B; ++b) {
        int32_t current = position == 0 ? 0 : next[b];
        for (int64_t t = 0; t < Tn; ++t) {
            start[b * Tn + t] = current;
            if (token[b * Tn + t] == separator) current = static_cast<int32_t>(position + t + 1);
        }
        next[b] = current;
    }
}

void CpuBackend::document_positions(TensorView positions, TensorView starts, int first_position) {
    const char* op = "document_positions";
    require_rank(starts, DType::i32, 2, op, "starts");
    const int64_t B = starts.dim(0), T = starts.dim(1);
    require_int32(positions, {B, T}, op, "positions");
    require(first_position >= 0, op, "first_position must not be negative");
    const int32_t* start = starts.as<const int32_t>();
    int32_t* position = positions.as<int32_t>();
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t)
            position[b * T + t] = static_cast<int32_t>(first_position + t - start[b * T + t]);
}

}  // namespace mixgpt::cpu
