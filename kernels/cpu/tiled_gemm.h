// Matrix products that give the same bits for any thread count.
//
// OpenBLAS's threaded sgemm splits its work by the number of threads, which
// changes how each sum is blocked and so its last bits (measured: 1 vs 3 threads
// differ on most shapes). Here C is cut into fixed tiles, independent of the
// thread count; OpenMP threads take whole tiles and each tile is one
// single-threaded sgemm call (OpenBLAS runs serially inside a parallel region).
#pragma once

#include <cstdint>

namespace mixgpt::cpu {

// Work on one finished tile of C, rows [row, row + rows) and columns [column, column + columns),
// run by the thread that computed it while the tile is still in its cache.
class TileEpilogue {
public:
    virtual ~TileEpilogue() = default;
    virtual void apply(int64_t row, int64_t rows, int64_t column, int64_t columns) const = 0;
};

// C (M,N) = op(A) · op(B) + beta * C, row-major; op(A) is (M,K), op(B) is (K,N).
// transpose_a: A is stored (K,M); transpose_b: B is stored (N,K). `epilogue`, if not null, is
// applied to each tile of C after its product.
void tiled_sgemm(bool transpose_a, bool transpose_b, int64_t M, int64_t N, int64_t K, const float* A,
                 int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
                 const TileEpilogue* epilogue = nullptr);

}  // namespace mixgpt::cpu
