#include "kernels/cpu/tiled_gemm.h"

#include <cblas.h>

#include <algorithm>
#include <climits>

#include "kernels/cpu/tensor_checks.h"

namespace mixgpt::cpu {
namespace {

// 64 rows amortize the packing of B; 1024 columns leave work for every thread when M is small.
constexpr int64_t kTileRows = 64;
constexpr int64_t kTileColumns = 1024;

void require_blas_int(int64_t value) {
    require(value >= 0 && value <= INT_MAX, "matmul", "a dimension does not fit BLAS's int");
}

}  // namespace

void tiled_sgemm(bool transpose_a, bool transpose_b, int64_t M, int64_t N, int64_t K, const float* A,
                 int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
                 const TileEpilogue* epilogue) {
    for (int64_t dimension : {M, N, K, lda, ldb, ldc}) require_blas_int(dimension);
    const int64_t row_tiles = (M + kTileRows - 1) / kTileRows;
    const int64_t column_tiles = (N + kTileColumns - 1) / kTileColumns;
#pragma omp parallel for schedule(dynamic)
    for (int64_t tile = 0; tile < row_tiles * column_tiles; ++tile) {
        const int64_t i = tile / column_tiles * kTileRows, j = tile % column_tiles * kTileColumns;
        const int64_t m = std::min(kTileRows, M - i), n = std::min(kTileColumns, N - j);
        const float* a = transpose_a ? A + i : A + i * lda;
        const float* b = transpose_b ? B + j * ldb : B + j;
        cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans,
                    transpose_b ? CblasTrans : CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                    static_cast<int>(K), 1.f, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
                    C + i * ldc + j, static_cast<int>(ldc));
        if (epilogue != nullptr) epilogue->apply(i, m, j, n);
    }
}

}  // namespace mixgpt::cpu
