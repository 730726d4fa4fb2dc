// Token + position embedding, forward and backward.
#include <string>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/float_io.h"
#include "kernels/cpu/tensor_checks.h"

namespace mixgpt::cpu {
namespace {

constexpr int64_t kColumnBlock = 16;  // columns one thread owns in the backward scatter-add

void require_tokens_in_range(const int32_t* tokens, int64_t count, int64_t vocabulary, const char* op) {
    for (int64_t i = 0; i < count; ++i)
        if (tokens[i] < 0 || tokens[i] >= vocabulary)
            throw Error(std::string("cpu ") + op + ": token " + std::to_string(tokens[i]) + " at index " +
                        std::to_string(i) + " is outside [0, " + std::to_string(vocabulary) + ")");
}

// The position-table row of each (b, t): positions[b,t] when given (each checked to lie in
// [0, table_rows)), else t; table_rows: the rows the embedding reads (all of the table's with
// positions, T without).
struct PositionRows {
    const int32_t* positions = nullptr;
    int64_t T = 0, table_rows = 0;
    int64_t of(int64_t row) const { return positions != nullptr ? positions[row] : row % T; }
};

PositionRows position_rows(const TensorView& positions, int64_t B, int64_t T, int64_t table_rows, const char* op) {
    if (!positions.valid()) return {nullptr, T, T};
    require_int32(positions, {B, T}, op, "positions");
    const int32_t* position = positions.as<const int32_t>();
    for (int64_t i = 0; i < B * T; ++i)
        if (position[i] < 0 || position[i] >= table_rows)
            throw Error(std::string("cpu ") + op + ": position " + std::to_string(position[i]) + " at index " +
                        std::to_string(i) + " is outside [0, " + std::to_string(table_rows) + ")");
    return {position, T, table_rows};
}

}  // namespace

void CpuBackend::embedding_forward(TensorView out, TensorView tokens, TensorView wte, TensorView wpe,
                                   TensorView positions) {
    const char* op = "embedding_forward";
    require_rank(out, act(), 3, op, "out");
    const int64_t B = out.dim(0), T = out.dim(1), C = out.dim(2);
    require_int32(tokens, {B, T}, op, "tokens");
    require_rank(wte, act(), 2, op, "wte");
    require_tensor(wte, act(), {wte.dim(0), C}, op, "wte");
    const bool learned = wpe.valid();
    if (learned) {
        require_rank(wpe, act(), 2, op, "wpe");
        require_tensor(wpe, act(), {wpe.dim(0), C}, op, "wpe");
        require(wpe.dim(0) >= T, op, "wpe has fewer rows than the sequence length");
    }
    const int32_t* token = tokens.as<const int32_t>();
    require_tokens_in_range(token, B * T, wte.dim(0), op);
    const PositionRows rows = position_rows(positions, B, T, learned ? wpe.dim(0) : T, op);

    const FloatInput token_table(scratch_, wte);
    const FloatInput position_table(scratch_, learned ? TensorView(wpe.data, wpe.dtype, {rows.table_rows, C})
                                                      : TensorView(nullptr, DType::f32, {0, C}));
    FloatOutput result(scratch_, out, false);
    float* y = result.data();
#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < B * T; ++row) {
        const float* e = token_table.data() + token[row] * C;
        if (!learned) {
            for (int64_t c = 0; c < C; ++c) y[row * C + c] = e[c];
            continue;
        }
        const float* p = position_table.data() + rows.of(row) * C;
        for (int64_t c = 0; c < C; ++c) y[row * C + c] = e[c] + p[c];
    }
    result.store();
}

void CpuBackend::embedding_backward(TensorView dwte, TensorView dwpe, TensorView dout, TensorView tokens,
                                    TensorView positions) {
    const char* op = "embedding_backward";
    require_rank(dout, act(), 3, op, "dout");
    const int64_t B = dout.dim(0), T = dout.dim(1), C = dout.dim(2);
    require_int32(tokens, {B, T}, op, "tokens");
    require_rank(dwte, DType::f32, 2, op, "dwte");
    require_tensor(dwte, DType::f32, {dwte.dim(0), C}, op, "dwte");
    const bool learned = dwpe.valid();
    if (learned) {
        require_rank(dwpe, DType::f32, 2, op, "dwpe");
        require_tensor(dwpe, DType::f32, {dwpe.dim(0), C}, op, "dwpe");
        require(dwpe.dim(0) >= T, op, "dwpe has fewer rows than the sequence length");
    }
    const int32_t* token = tokens.as<const int32_t>();
    require_tokens_in_range(token, B * T, dwte.dim(0), op);
    const PositionRows rows = position_rows(positions, B, T, learned ? dwpe.dim(0) : T, op);

    const FloatInput gradient(scratch_, dout);
    const float* dy = gradient.data();
    float* dtoken = dwte.as<float>();
    float* dposition = learned ? dwpe.as<float>() : nullptr;
    // Each thread owns whole column blocks and adds rows in order: a fixed summation order.
#pragma omp parallel for schedule(static)
    for (int64_t begin = 0; begin < C; begin += kColumnBlock) {
        const int64_t end = begin + kColumnBlock < C ? begin + kColumnBlock : C;
        for (int64_t row = 0; row < B * T; ++row) {
            float* e = dtoken + token[row] * C;
            for (int64_t c = begin; c < end; ++c) e[c] += dy[row * C + c];
            if (dposition == nullptr) continue;
            float* p = dposition + rows.of(row) * C;
            for (int64_t c = begin; c < end; ++c) p[c] += dy[row * C + c];
        }
    }
}

}  // namespace mixgpt::cpu
