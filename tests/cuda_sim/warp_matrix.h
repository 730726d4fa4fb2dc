// The sm_80 warp-level matrix instructions of kernels/cuda/device_primitives.cuh, emulated from
// their definitions in the PTX ISA (not from the kernels' use of them):
//   ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16: lane 8i + r gives the address of row r of
//     8x8 matrix i (16 bytes, 16-byte aligned, in shared memory); register i of lane l receives
//     row l/4, elements 2(l%4) and 2(l%4)+1 of matrix i, or of its transpose with .trans. All
//     rows are read when the last lane arrives, as the warp-wide instruction does.
//   mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}: D = A (16x16) · B (16x8) + C, with
//     g = l/4, t = l%4 for lane l:
//       A registers 0..3 hold (g, 2t..2t+1), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..);
//       B registers 0..1 hold (k 2t..2t+1, n g), (k 2t+8.., n g);
//       C, D floats 0..3 are (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1);
//     the lower-indexed element of a pair sits in the register's low 16 bits. Each D float is
//     C + the row-column dot product in the simulated device's tensor-core arithmetic
//     (tensor_cores.h: H100's or A100's model, or exact sums).
// Each ldmatrix phase (one 8x8 matrix: 8 rows of 16 bytes) is counted with its bank conflicts.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tests/cuda_sim/bank_conflicts.h"
#include "tests/cuda_sim/block_runner.h"
#include "tests/cuda_sim/tensor_cores.h"

namespace mixgpt::cuda_sim {

template <bool kTransposed>
void resolve_load_matrix(const LaneSlot (&deposits)[32], LaneSlot (&results)[32], unsigned) {
    const auto row_address = [&](int lane) {
        const unsigned char* address;
        std::memcpy(&address, deposits[lane].bytes, sizeof address);
        return address;
    };
    const auto element = [&](int matrix, int row, int column) {
        uint16_t bits;
        std::memcpy(&bits, row_address(8 * matrix + row) + 2 * column, sizeof bits);
        return uint32_t{bits};
    };
    for (int matrix = 0; matrix < 4; ++matrix) {
        int rows_on_bank[32] = {};
        for (int row = 0; row < 8; ++row) {
            const uintptr_t first_bank = reinterpret_cast<uintptr_t>(row_address(8 * matrix + row)) / 4;
            for (uintptr_t b = 0; b < 4; ++b) ++rows_on_bank[(first_bank + b) % 32];
        }
        count_ldmatrix_phase(*std::max_element(rows_on_bank, rows_on_bank + 32) - 1);
    }
    for (int l = 0; l < 32; ++l) {
        uint32_t registers[4];
        for (int i = 0; i < 4; ++i) {
            const int r = l / 4, c = 2 * (l % 4);
            registers[i] = kTransposed ? element(i, c, r) | element(i, c + 1, r) << 16
                                       : element(i, r, c) | element(i, r, c + 1) << 16;
        }
        std::memcpy(results[l].bytes, registers, sizeof registers);
    }
}

template <bool kTransposed>
void load_matrix_x4(uint32_t (&r)[4], const void* row_address) {
    const char* instruction = kTransposed ? "ldmatrix.x4.trans" : "ldmatrix.x4";
    expect_shared(instruction, row_address, 16, 16);
    const LaneSlot& result = warp_collective(instruction, 0xffffffffu, &row_address, sizeof row_address,
                                             resolve_load_matrix<kTransposed>);
    std::memcpy(r, result.bytes, sizeof r);
}

struct MmaDeposit {
    uint32_t a[4];
    uint32_t b[2];
    float c[4];
};

template <typename T>
double element_of(uint32_t pair, int which) {
    const auto bits = static_cast<unsigned short>(pair >> (16 * which));
    if constexpr (std::is_same_v<T, __nv_bfloat16>)
        return __bfloat162float(__ushort_as_bfloat16(bits));
    else
        return __half2float(__ushort_as_half(bits));
}

// Every lane's result: its 4 C floats plus the products of A's row and B's column (rows and
// columns of its C floats), in the tensor cores' arithmetic.
template <typename T>
void resolve_mma(const LaneSlot (&deposits)[32], LaneSlot (&results)[32], unsigned) {
    MmaDeposit in[32];
    for (int l = 0; l < 32; ++l) std::memcpy(&in[l], deposits[l].bytes, sizeof(MmaDeposit));
    const auto a = [&](int row, int k) {
        const int lane = 4 * (row % 8) + (k % 8) / 2;
        const int reg = (row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0);
        return element_of<T>(in[lane].a[reg], k % 2);
    };
    const auto b = [&](int k, int n) {
        const int lane = 4 * n + (k % 8) / 2;
        return element_of<T>(in[lane].b[k >= 8 ? 1 : 0], k % 2);
    };
    const TensorCoreModel& model =
        simulated_tensor_cores(std::is_same_v<T, __nv_bfloat16> ? TensorCoreInput::bf16 : TensorCoreInput::fp16);
    // A (row, k), B (k, column), each element made an operand once
    TensorCoreOperand a_values[16][16], b_values[16][8];
    for (int row = 0; row < 16; ++row)
        for (int k = 0; k < 16; ++k) a_values[row][k] = tensor_core_input(model, a(row, k));
    for (int k = 0; k < 16; ++k)
        for (int column = 0; column < 8; ++column) b_values[k][column] = tensor_core_input(model, b(k, column));
    for (int l = 0; l < 32; ++l) {
        float d[4];
        for (int i = 0; i < 4; ++i) {
            const int row = l / 4 + 8 * (i / 2), column = 2 * (l % 4) + (i % 2);
            d[i] = tensor_core_dot(model, a_values[row], &b_values[0][column], 8, 16, in[l].c[i]);
        }
        std::memcpy(results[l].bytes, d, sizeof d);
    }
}

template <typename T>
void mma_16x8x16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    const MmaDeposit deposit{{a[0], a[1], a[2], a[3]}, {b0, b1}, {c[0], c[1], c[2], c[3]}};
    const LaneSlot& result =
        warp_collective("mma.m16n8k16", 0xffffffffu, &deposit, sizeof deposit, resolve_mma<T>);
    std::memcpy(c, result.bytes, sizeof c);
}

}  // namespace mixgpt::cuda_sim
