#include "kernels/cpu/fp8_cast.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/tensor_checks.h"

namespace mixgpt::cpu {
namespace {

constexpr int64_t kBlockRows = 64;      // rows one thread quantizes at a time
constexpr int64_t kTransposeTile = 64;  // square tiles of the transposed copy

}  // namespace

Fp8QuantizeStats quantize_fp8(const TensorView& in, float scale, Fp8Format format, uint8_t* codes,
                              uint8_t* codes_transposed) {
    const char* op = "quantize_fp8";
    require(in.valid() && in.rank >= 1, op, "in must be a tensor of rank 1 or more");
    require(in.dtype == DType::f32 || in.dtype == DType::bf16 || in.dtype == DType::f16, op,
            "in must be fp32, bf16 or fp16");
    require(codes != nullptr, op, "no codes to write");
    const int64_t cols = in.dim(-1), rows = cols == 0 ? 0 : in.numel() / cols;
    const size_t element_bytes = dtype_size(in.dtype);
    const int64_t blocks = (rows + kBlockRows - 1) / kBlockRows;
    float amax = 0.f;
    uint64_t saturated = 0;
#pragma omp parallel reduction(max : amax) reduction(+ : saturated)
    {
        std::vector<float> values(static_cast<size_t>(kBlockRows * cols));
#pragma omp for schedule(static)
        for (int64_t block = 0; block < blocks; ++block) {
            const int64_t first = block * kBlockRows * cols;
            const auto count = static_cast<size_t>(std::min(kBlockRows, rows - block * kBlockRows) * cols);
            convert_to_float(static_cast<const char*>(in.data) + static_cast<size_t>(first) * element_bytes,
                             in.dtype, values.data(), count);
            const Fp8QuantizeStats stats =
                quantize_to_fp8(values.data(), scale, codes + first, count, format);
            amax = std::max(amax, stats.amax);
            saturated += stats.saturated;
        }
    }
    if (codes_transposed != nullptr) {
        const int64_t row_tiles = (rows + kTransposeTile - 1) / kTransposeTile;
        const int64_t col_tiles = (cols + kTransposeTile - 1) / kTransposeTile;
#pragma omp parallel for collapse(2) schedule(static)
        for (int64_t row_tile = 0; row_tile < row_tiles; ++row_tile)
            for (int64_t col_tile = 0; col_tile < col_tiles; ++col_tile)
                for (int64_t c = col_tile * kTransposeTile;
                     c < std::min(cols, (col_tile + 1) * kTransposeTile); ++c)
                    for (int64_t r = row_tile * kTransposeTile;
                         r < std::min(rows, (row_tile + 1) * kTransposeTile); ++r)
                        codes_transposed[c * rows + r] = codes[r * cols + c];
    }
    return {amax, saturated};
}

}  // namespace mixgpt::cpu
