// The FP8 product of fp8_matmul.h: B decoded once into a (K, N) fp32 panel, rows of A decoded per
// panel of 48 rows, then register tiles of 6 rows x 16 columns (12 AVX accumulators), each element
// summed over k in order. Threads take whole row panels, so no element's sum depends on the
// thread count.
#include "kernels/cpu/fp8_matmul.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/tensor_checks.h"

namespace mixgpt::cpu {
namespace {

// The product loop, compiled for FMA (with the 256-bit AVX registers it implies; a fused
// multiply-add of an exact product rounds as the multiply then add does) as well as the baseline;
// the loader picks one by what the processor supports.
#define MIXGPT_FMA_CLONES __attribute__((target_clones("fma", "default")))

constexpr int64_t kTileRows = 6;
constexpr int64_t kTileColumns = 16;
constexpr int64_t kPanelRows = 8 * kTileRows;

int64_t round_up(int64_t value, int64_t unit) { return (value + unit - 1) / unit * unit; }

// Eight floats in one AVX register (two SSE registers in the baseline clone).
typedef float Vec8 __attribute__((vector_size(32)));
typedef float Vec8Unaligned __attribute__((vector_size(32), aligned(4)));
static_assert(kTileColumns == 16, "a tile row is two Vec8");

// sums (kTileRows, kTileColumns) = A · panel[:, 0 .. kTileColumns), each sum over k in ascending
// order from 0. a_packed (K, kTileRows): the tile's rows of A interleaved, a_packed[k][r] = A[r][k];
// panel (K, kTileColumns used of `panel_stride`).
MIXGPT_FMA_CLONES void multiply_tile(const float* a_packed, int64_t K, const float* panel,
                                     int64_t panel_stride, float* sums) {
    Vec8 acc[kTileRows][2] = {};
    for (int64_t k = 0; k < K; ++k) {
        const float* b = panel + k * panel_stride;
        const Vec8 b_low = *reinterpret_cast<const Vec8Unaligned*>(b);
        const Vec8 b_high = *reinterpret_cast<const Vec8Unaligned*>(b + 8);
        const float* a = a_packed + k * kTileRows;
        for (int64_t r = 0; r < kTileRows; ++r) {
            acc[r][0] += a[r] * b_low;
            acc[r][1] += a[r] * b_high;
        }
    }
    for (int64_t r = 0; r < kTileRows; ++r)
        for (int64_t c = 0; c < 8; ++c) {
            sums[r * kTileColumns + c] = acc[r][0][c];
            sums[r * kTileColumns + 8 + c] = acc[r][1][c];
        }
}

// The decoded value of every code of `format`.
std::vector<float> decode_table(Fp8Format format) {
    std::vector<float> table(256);
    for (int code = 0; code < 256; ++code)
        table[static_cast<size_t>(code)] = fp8_bits_to_float(static_cast<uint8_t>(code), format);
    return table;
}

void check_operands(const TensorView& out, const Fp8Matrix& a, const Fp8Matrix& b, const TensorView& bias) {
    const char* op = "fp8_matmul";
    require(a.codes != nullptr && b.codes != nullptr, op, "an operand has no codes");
    require(a.cols == b.cols, op, "a and b differ in K (a is (M,K), b is (N,K))");
    require(a.rows >= 0 && b.rows >= 0 && a.cols >= 0, op, "negative dimension");
    require(!(a.format == Fp8Format::e5m2 && b.format == Fp8Format::e5m2), op,
            "e5m2 x e5m2 (cuBLASLt has no FP8 product of two E5M2 operands)");
    require(out.dtype == DType::bf16 || out.dtype == DType::f16 || out.dtype == DType::f32, op,
            "out must be bf16, fp16 or fp32");
    require_tensor(out, out.dtype, {a.rows, b.rows}, op, "out");
    if (bias.valid()) {
        const DType bias_dtype = out.dtype == DType::f16 ? DType::f16 : DType::bf16;
        require_tensor(bias, bias_dtype, {b.rows}, op, "bias (bf16 for bf16 or fp32 out, fp16 for fp16 out)");
    }
}

}  // namespace

void fp8_matmul(TensorView out, const Fp8Matrix& a, const Fp8Matrix& b, TensorView bias, bool accumulate) {
    check_operands(out, a, b, bias);
    const int64_t M = a.rows, N = b.rows, K = a.cols;
    if (M == 0 || N == 0) return;
    const std::vector<float> a_table = decode_table(a.format), b_table = decode_table(b.format);

    // panel (K, N_padded) = decode(B)^T; the padding columns are zero and never stored.
    const int64_t padded_columns = round_up(N, kTileColumns);
    std::vector<float> panel(static_cast<size_t>(K * padded_columns), 0.f);
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k)
            panel[static_cast<size_t>(k * padded_columns + n)] = b_table[b.codes[n * K + k]];

    std::vector<float> bias_values(static_cast<size_t>(N), 0.f);
    if (bias.valid()) convert_to_float(bias.data, bias.dtype, bias_values.data(), static_cast<size_t>(N));
    const float scale = a.scale_inverse * b.scale_inverse;
    const int64_t panels = (M + kPanelRows - 1) / kPanelRows;

#pragma omp parallel
    {
        // The panel's rows of A, decoded, each tile of kTileRows rows interleaved (K, kTileRows);
        // rows past M are zero.
        std::vector<float> a_packed(static_cast<size_t>(kPanelRows * K));
        std::vector<float> result(static_cast<size_t>(kPanelRows * N));  // (rows, N) of this panel
        float sums[kTileRows * kTileColumns];
#pragma omp for schedule(static)
        for (int64_t p = 0; p < panels; ++p) {
            const int64_t first_row = p * kPanelRows;
            const int64_t rows = std::min(kPanelRows, M - first_row);
            for (int64_t r = 0; r < kPanelRows; ++r) {
                float* tile = &a_packed[static_cast<size_t>(r / kTileRows * kTileRows * K + r % kTileRows)];
                for (int64_t k = 0; k < K; ++k)
                    tile[k * kTileRows] = r < rows ? a_table[a.codes[(first_row + r) * K + k]] : 0.f;
            }
            for (int64_t column = 0; column < N; column += kTileColumns) {
                const int64_t columns = std::min(kTileColumns, N - column);
                for (int64_t row = 0; row < rows; row += kTileRows) {
                    multiply_tile(&a_packed[static_cast<size_t>(row * K)], K,
                                  &panel[static_cast<size_t>(column)], padded_columns, sums);
                    for (int64_t r = 0; r < std::min(kTileRows, rows - row); ++r)
                        for (int64_t c = 0; c < columns; ++c)
                            result[static_cast<size_t>((row + r) * N + column + c)] =
                                sums[r * kTileColumns + c] * scale;
                }
            }
            // The epilogue on the panel's rows: + out (accumulate), + bias, round to out's dtype.
            float* values = result.data();
            const size_t count = static_cast<size_t>(rows * N);
            const size_t offset = static_cast<size_t>(first_row * N);
            const size_t element_bytes = dtype_size(out.dtype);
            void* destination = static_cast<char*>(out.data) + offset * element_bytes;
            if (accumulate) {
                std::vector<float> current(count);
                convert_to_float(destination, out.dtype, current.data(), count);
                for (size_t i = 0; i < count; ++i) values[i] = current[i] + values[i];
            }
            if (bias.valid())
                for (int64_t r = 0; r < rows; ++r)
                    for (int64_t n = 0; n < N; ++n) values[r * N + n] += bias_values[static_cast<size_t>(n)];
            convert_from_float(values, destination, out.dtype, count);
        }
    }
}

}  // namespace mixgpt::cpu
