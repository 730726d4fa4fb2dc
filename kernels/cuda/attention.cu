// Causal attention (grouped key/value heads, optional RoPE, the document mask, a sliding window):
// the ops of kernels/ops.def, checked, and dispatched to the fused flash kernels (flash_attention.h:
// bf16/fp16 with head_dim 64 or 128), to the fp32 products (attention_products.h: fp32 and tf32
// runs) or to the simple kernels (attention_simple.h: everything else, and the KV-cached forward);
// the device copy of RoPE's table.
#include <cmath>

#include "core/log.h"
#include "kernels/cuda/attention_products.h"
#include "kernels/cuda/attention_simple.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/flash_attention.h"
#include "kernels/cuda/op_checks.h"

namespace mixgpt::cuda {
namespace {

// The heads of a packed qkv (kernels/ops.def) of the op's arguments.
struct QkvLayout {
    int64_t B, T, H, Hkv;
    int head_dim;

    int64_t row() const { return (H + 2 * Hkv) * head_dim; }
    int64_t q_width() const { return H * head_dim; }
    int64_t kv_width() const { return Hkv * head_dim; }
};

// qkv (B,T,(H+2Hkv)·hd) act with Hkv dividing H, head_dim <= kAttentionMaxHeadDim, even under RoPE.
QkvLayout check_qkv(const char* op, const TensorView& qkv, const AttentionParams& params) {
    expect_rank(op, "qkv", qkv, 3);
    const int64_t H = params.n_head, Hkv = params.n_kv_head, width = qkv.dim(2);
    MIXGPT_REQUIRE(H > 0 && Hkv > 0 && H % Hkv == 0,
                   format("cuda %s: n_kv_head %lld does not divide n_head %lld", op,
                          static_cast<long long>(Hkv), static_cast<long long>(H)));
    MIXGPT_REQUIRE(width > 0 && width % (H + 2 * Hkv) == 0,
                   format("cuda %s: qkv's last dimension %lld is not (n_head + 2 n_kv_head) * head_dim", op,
                          static_cast<long long>(width)));
    const int64_t head_dim = width / (H + 2 * Hkv);
    MIXGPT_REQUIRE(head_dim <= kAttentionMaxHeadDim,
                   format("cuda %s: head_dim %lld is above the %d this kernel supports", op,
                          static_cast<long long>(head_dim), kAttentionMaxHeadDim));
    MIXGPT_REQUIRE(params.rope_theta >= 0.f && (params.rope_theta == 0.f || head_dim % 2 == 0),
                   format("cuda %s: RoPE needs rope_theta > 0 (0: none) and an even head_dim", op));
    MIXGPT_REQUIRE(params.window >= 0, format("cuda %s: window %d is negative (0: none)", op, params.window));
    return {qkv.dim(0), qkv.dim(1), H, Hkv, static_cast<int>(head_dim)};
}

const float* table_data(const TensorView& table) { return table.valid() ? table.as<const float>() : nullptr; }

AttentionProductsShape products_shape(const QkvLayout& s) { return {s.B, s.T, s.H, s.Hkv, s.head_dim}; }

// What the fp32 products of a training op read besides the tensors (attention_products.h).
AttentionProductsContext products_context(LtMatmulRunner& matmuls, ScratchSpace& scratch, cudaStream_t stream,
                                          const char* op, const AttentionParams& params,
                                          const TensorView& rope, const QkvLayout& s, int64_t chunk) {
    return {matmuls,
            scratch,
            stream,
            table_data(rope),
            optional_indices(op, "document_starts", params.document_starts, {s.B, s.T}),
            params.window,
            chunk};
}

// The training ops' document bounds: both or neither.
void require_paired_bounds(const char* op, const AttentionParams& params) {
    MIXGPT_REQUIRE(params.document_starts.valid() == params.document_ends.valid(),
                   format("cuda %s: document_starts and document_ends go together", op));
}

}  // namespace

int64_t CudaBackend::attention_products_chunk(DType act, int64_t T, int64_t Hkv) const {
    if (!flash_attention_ || act != DType::f32 || attention_products_refused_) return 0;
    return attention_products_chunk_heads(T, Hkv, attention_products_bytes_);
}

bool CudaBackend::attention_products_done(const std::string& refused) {
    if (refused.empty()) return true;
    log_warning("cuda attention: cuBLASLt offers no algorithm for " + refused +
                "; fp32 attention takes the simple kernels from now on");
    attention_products_refused_ = true;
    return false;
}

size_t CudaBackend::attention_scratch_bytes(int64_t seq_len, int64_t n_kv_head) const {
    const size_t per_head = 2 * sizeof(float) * static_cast<size_t>(seq_len) * static_cast<size_t>(seq_len);
    const int64_t heads = attention_products_chunk(activation_dtype(precision_), seq_len, n_kv_head);
    return static_cast<size_t>(heads) * per_head;
}

TensorView CudaBackend::rope_table(const AttentionParams& params, int64_t head_dim, int64_t positions) {
    if (params.rope_theta == 0.f) return {};
    const RopeTableCache::Table table =
        rope_tables_.get(params.rope_theta, static_cast<int>(head_dim), positions);
    const size_t bytes = table.values.size() * sizeof(float);
    if (table.rebuilt) {
        if (rope_device_.bytes() < bytes) {
            synchronize();  // queued kernels may still read the old table
            rope_device_ = allocate(bytes);
        }
        copy_to_backend(rope_device_.data(), table.values.data(), bytes);  // ordered after those kernels
    }
    const int64_t rows = static_cast<int64_t>(table.values.size()) / head_dim;
    return TensorView(rope_device_.data(), DType::f32, {rows, head_dim});
}

void CudaBackend::attention_forward(TensorView out, TensorView lse, TensorView qkv,
                                    const AttentionParams& params) {
    const char* op = "attention_forward";
    expect_rank(op, "out", out, 3);
    const QkvLayout s = check_qkv(op, qkv, params);
    const DType act = qkv.dtype;
    expect_tensor(op, "out", out, act, {s.B, s.T, s.q_width()});
    expect_tensor(op, "lse", lse, DType::f32, {s.B, s.H, s.T});
    require_paired_bounds(op, params);
    if (s.B * s.T == 0) return;
    const TensorView rope = rope_table(params, s.head_dim, s.T);
    // The flash kernels move 16-byte vectors; other views take the simple path.
    if (flash_attention_ && flash_attention_supported(act, s.head_dim) &&
        all_aligned_16({qkv.data, out.data})) {
        flash_attention_forward(out, lse, qkv, folded_window(params, s.B, s.T), rope, stream_);
        return;
    }
    if (const int64_t chunk = attention_products_chunk(act, s.T, s.Hkv); chunk > 0) {
        const AttentionProductsContext context =
            products_context(*matmuls_, *scratch_, stream_, op, params, rope, s, chunk);
        if (attention_products_done(attention_products_forward(context, products_shape(s), out.as<float>(),
                                                               lse.as<float>(), qkv.as<const float>())))
            return;
    }
    dispatch_dtype(act, [&](auto tag) {
        using T = decltype(tag);
        ForwardArgs<T> args{};
        args.q = qkv.as<const T>();
        args.k = args.q + s.q_width();
        args.v = args.k + s.kv_width();
        args.q_batch_stride = args.kv_batch_stride = s.T * s.row();
        args.q_row_stride = args.kv_row_stride = s.row();
        args.out = out.as<T>();
        args.out_batch_stride = s.T * s.q_width();
        args.out_row_stride = s.q_width();
        args.lse = lse.as<float>();
        args.queries = static_cast<int>(s.T);
        args.query_offset = 0;
        args.heads = static_cast<int>(s.H);
        args.group = static_cast<int>(s.H / s.Hkv);
        args.head_dim = s.head_dim;
        args.scale = 1.f / std::sqrt(static_cast<float>(s.head_dim));
        args.q_rope = args.k_rope = table_data(rope);
        args.starts = optional_indices(op, "document_starts", params.document_starts, {s.B, s.T});
        args.window = params.window;
        launch_attention_forward(stream_, args, s.B);
    });
}

void CudaBackend::attention_backward(TensorView dqkv, TensorView dout, TensorView qkv, TensorView lse,
                                     const AttentionParams& params) {
    const char* op = "attention_backward";
    expect_rank(op, "dqkv", dqkv, 3);
    const QkvLayout s = check_qkv(op, qkv, params);
    const DType act = qkv.dtype;
    expect_tensor(op, "dqkv", dqkv, act, {s.B, s.T, s.row()});
    expect_tensor(op, "dout", dout, act, {s.B, s.T, s.q_width()});
    expect_tensor(op, "lse", lse, DType::f32, {s.B, s.H, s.T});
    require_paired_bounds(op, params);
    if (s.B * s.T == 0) return;
    const TensorView rope = rope_table(params, s.head_dim, s.T);
    const size_t delta_bytes = flash_attention_backward_workspace_bytes(s.B, static_cast<int>(s.H), s.T);
    auto* delta = static_cast<float*>(scratch_->get(ScratchSlot::attention_delta, delta_bytes));
    if (flash_attention_ && flash_attention_supported(act, s.head_dim) &&
        all_aligned_16({qkv.data, dqkv.data, dout.data})) {
        flash_attention_backward(dqkv, dout, qkv, lse, TensorView(delta, DType::f32, {s.B, s.H, s.T}),
                                 folded_window(params, s.B, s.T), rope, stream_);
        return;
    }
    if (const int64_t chunk = attention_products_chunk(act, s.T, s.Hkv); chunk > 0) {
        const AttentionProductsContext context =
            products_context(*matmuls_, *scratch_, stream_, op, params, rope, s, chunk);
        if (attention_products_done(attention_products_backward(context, products_shape(s), dqkv.as<float>(),
                                                                dout.as<const float>(), qkv.as<const float>(),
                                                                lse.as<const float>())))
            return;
    }
    dispatch_dtype(act, [&](auto tag) {
        using T = decltype(tag);
        BackwardArgs<T> args{};
        args.dqkv = dqkv.as<T>();
        args.qkv = qkv.as<const T>();
        args.dout = dout.as<const T>();
        args.lse = lse.as<const float>();
        args.delta = delta;
        args.T_len = static_cast<int>(s.T);
        args.heads = static_cast<int>(s.H);
        args.group = static_cast<int>(s.H / s.Hkv);
        args.head_dim = s.head_dim;
        args.row_stride = s.row();
        args.q_width = static_cast<int>(s.q_width());
        args.kv_width = static_cast<int>(s.kv_width());
        args.scale = 1.f / std::sqrt(static_cast<float>(s.head_dim));
        args.rope = table_data(rope);
        args.starts = optional_indices(op, "document_starts", params.document_starts, {s.B, s.T});
        args.ends = optional_indices(op, "document_ends", params.document_ends, {s.B, s.T});
        args.window = params.window;
        launch_attention_backward(stream_, args, s.B);
    });
}

void CudaBackend::attention_forward_cached(TensorView out, TensorView qkv, TensorView k_cache,
                                           TensorView v_cache, int position, const AttentionParams& params) {
    const char* op = "attention_forward_cached";
    expect_rank(op, "out", out, 3);
    const QkvLayout s = check_qkv(op, qkv, params);
    expect_rank(op, "k_cache", k_cache, 3);
    const int64_t B = s.B, Tn = s.T, max_T = k_cache.dim(1);
    const DType act = qkv.dtype;
    expect_tensor(op, "out", out, act, {B, Tn, s.q_width()});
    expect_tensor(op, "k_cache", k_cache, act, {B, max_T, s.kv_width()});
    expect_tensor(op, "v_cache", v_cache, act, {B, max_T, s.kv_width()});
    MIXGPT_REQUIRE(position >= 0 && position + Tn <= max_T,
                   format("cuda %s: positions [%d, %lld) do not fit the cache's %lld", op, position,
                          static_cast<long long>(position + Tn), static_cast<long long>(max_T)));
    if (B * Tn == 0) return;
    const TensorView rope = rope_table(params, s.head_dim, max_T);
    dispatch_dtype(act, [&](auto tag) {
        using T = decltype(tag);
        launch_write_cache<T>(stream_, k_cache.as<T>(), v_cache.as<T>(), qkv.as<const T>(), B * Tn,
                              static_cast<int>(Tn), static_cast<int>(max_T), s.row(),
                              static_cast<int>(s.q_width()), static_cast<int>(s.kv_width()), s.head_dim,
                              position, table_data(rope));
        ForwardArgs<T> args{};
        args.q = qkv.as<const T>();
        args.q_batch_stride = Tn * s.row();
        args.q_row_stride = s.row();
        args.k = k_cache.as<const T>();
        args.v = v_cache.as<const T>();
        args.kv_batch_stride = max_T * s.kv_width();
        args.kv_row_stride = s.kv_width();
        args.out = out.as<T>();
        args.out_batch_stride = Tn * s.q_width();
        args.out_row_stride = s.q_width();
        args.lse = nullptr;
        args.queries = static_cast<int>(Tn);
        args.query_offset = position;
        args.heads = static_cast<int>(s.H);
        args.group = static_cast<int>(s.H / s.Hkv);
        args.head_dim = s.head_dim;
        args.scale = 1.f / std::sqrt(static_cast<float>(s.head_dim));
        args.q_rope = table_data(rope);
        args.k_rope = nullptr;  // the cache holds rotated keys
        args.starts = optional_indices(op, "document_starts", params.document_starts, {B, Tn});
        args.window = params.window;
        launch_attention_forward(stream_, args, B);
    });
}

}  // namespace mixgpt::cuda
