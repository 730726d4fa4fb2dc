#include "bench/kernel_lab/attention_lab.h"

#include <algorithm>
#include <random>
#include <string>

#include "bench/kernel_lab/lab_check.h"
#include "bench/kernel_lab/lab_fill.h"
#include "core/cuda_check.h"
#include "core/log.h"
#include "kernels/cuda/flash_attention.h"
#include "kernels/rope_table.h"

namespace mixgpt::lab {
namespace {

constexpr int kTokens = 16384;
constexpr int kHeads = 12;

constexpr int32_t kSeparator = 1;  // the token that ends a document in the document-mask shapes

// Half the sum of the squared document lengths of a sequence: its causal half, T²/2, without
// the document mask; under a window of W, T·W − W²/2 (T²/2 at W = T).
double visible_pairs(const AttentionShape& s) {
    if (s.window > 0) return static_cast<double>(s.length) * s.window - static_cast<double>(s.window) * s.window / 2;
    if (s.document_length == 0) return static_cast<double>(s.length) * s.length / 2;
    const int whole = s.length / s.document_length, rest = s.length % s.document_length;
    return (static_cast<double>(whole) * s.document_length * s.document_length +
            static_cast<double>(rest) * rest) /
           2;
}

double forward_flops(const AttentionShape& s) {
    return 4.0 * s.batch * s.heads * visible_pairs(s) * s.head_dim;
}

std::string shape_text(const AttentionShape& s) {
    const std::string documents = s.document_length > 0 ? format(" documents=%d", s.document_length)
                                  : s.window > 0        ? format(" window=%d", s.window)
                                                        : "";
    if (s.kv_heads == s.heads && s.rope_theta == 0.f)
        return format("B=%d T=%d H=%d hd=%d", s.batch, s.length, s.heads, s.head_dim) + documents;
    return format("B=%d T=%d H=%d Hkv=%d hd=%d theta=%g", s.batch, s.length, s.heads, s.kv_heads, s.head_dim,
                  static_cast<double>(s.rope_theta)) +
           documents;
}

bool grouped(const AttentionShape& s) { return s.kv_heads != s.heads || s.rope_theta != 0.f; }

// The rows' name suffix of a shape's variant.
std::string variant_name(const AttentionShape& s) {
    if (s.document_length > 0) return format(" (documents %d)", s.document_length);
    if (s.window > 0) return format(" (window %d)", s.window);
    return grouped(s) ? " (GQA+RoPE)" : "";
}

// Each position's first visible key and one past its last seeing query under a window of W (one
// document a row): what CudaBackend::folded_window hands the flash kernels. (B,T) each.
void window_bounds(const AttentionShape& s, std::vector<int32_t>& starts, std::vector<int32_t>& ends) {
    for (int b = 0; b < s.batch; ++b)
        for (int t = 0; t < s.length; ++t) {
            starts.push_back(std::max(0, t - s.window + 1));
            ends.push_back(std::min(s.length, t + s.window));
        }
}

// One attention problem's tensors in backend memory.
struct AttentionTensors {
    // `flash`: for the flash kernels, called directly: the RoPE table (kernels/rope_table.h) is
    // uploaded when the shape has RoPE, and a window is folded into the bounds as the CUDA
    // backend folds it; else for a Backend's ops (the CPU backend keeps its own table and takes
    // the window as it is).
    AttentionTensors(Backend& backend, const AttentionShape& s, DType act, bool flash) {
        const int64_t B = s.batch, T = s.length, H = s.heads, C = H * s.head_dim;
        const int64_t width = int64_t{s.heads + 2 * s.kv_heads} * s.head_dim;
        qkv = make(backend, act, {B, T, width});
        out = make(backend, act, {B, T, C});
        dout = make(backend, act, {B, T, C});
        dqkv = make(backend, act, {B, T, width});
        lse = make(backend, DType::f32, {B, H, T});
        delta = make(backend, DType::f32, {B, H, T});
        params = s.params();
        if (s.document_length > 0) {  // each row: documents of document_length tokens, ended by kSeparator
            std::vector<int32_t> tokens(static_cast<size_t>(B * T), 0);
            for (int64_t i = 0; i < B * T; ++i)
                if ((i % T) % s.document_length == s.document_length - 1)
                    tokens[static_cast<size_t>(i)] = kSeparator;
            const TensorView token_view = make(backend, DType::i32, {B, T});
            backend.copy_to_backend(token_view.data, tokens.data(), token_view.bytes());
            params.document_starts = make(backend, DType::i32, {B, T});
            params.document_ends = make(backend, DType::i32, {B, T});
            backend.document_bounds(params.document_starts, params.document_ends, token_view, kSeparator);
        }
        if (s.window > 0 && flash) {
            std::vector<int32_t> starts, ends;
            window_bounds(s, starts, ends);
            params.document_starts = make(backend, DType::i32, {B, T});
            params.document_ends = make(backend, DType::i32, {B, T});
            backend.copy_to_backend(params.document_starts.data, starts.data(), params.document_starts.bytes());
            backend.copy_to_backend(params.document_ends.data, ends.data(), params.document_ends.bytes());
        } else {
            params.window = s.window;
        }
        if (!flash || s.rope_theta == 0.f) return;
        const std::vector<float> table = rope_table(s.rope_theta, s.head_dim, T);
        rope_cos_sin = make(backend, DType::f32, {T, s.head_dim});
        backend.copy_to_backend(rope_cos_sin.data, table.data(), rope_cos_sin.bytes());
    }
    // What a forward reads and writes (qkv, out, lse): the smallest working set of the timed
    // kernels, so rotating past it rotates past the backward's too.
    static size_t forward_bytes(const AttentionShape& s, DType act) {
        const size_t rows = static_cast<size_t>(s.batch) * s.length,
                     C = static_cast<size_t>(s.heads) * s.head_dim,
                     width = static_cast<size_t>(s.heads + 2 * s.kv_heads) * s.head_dim;
        return rows * (width + C) * dtype_size(act) + rows * s.heads * sizeof(float);
    }

    TensorView qkv, out, dout, dqkv, lse, delta;
    TensorView rope_cos_sin;  // (T, hd) f32 under RoPE, else invalid
    AttentionParams params;   // the shape's, with the document bounds (B,T) i32 under the document mask

private:
    TensorView make(Backend& backend, DType dtype, std::initializer_list<int64_t> shape) {
        TensorView view(nullptr, dtype, shape);
        buffers_.push_back(backend.allocate(view.bytes()));
        view.data = buffers_.back().data();
        return view;
    }
    std::vector<Buffer> buffers_;
};

void flash_forward(const AttentionTensors& t, cudaStream_t stream) {
    cuda::flash_attention_forward(t.out, t.lse, t.qkv, t.params, t.rope_cos_sin, stream);
}

void flash_backward(const AttentionTensors& t, cudaStream_t stream) {
    cuda::flash_attention_backward(t.dqkv, t.dout, t.qkv, t.lse, t.delta, t.params, t.rope_cos_sin, stream);
}

// Columns [begin, end) of each row of a (rows, width) tensor: the q, k or v heads of qkv.
std::vector<float> columns(const std::vector<float>& values, int64_t width, int64_t begin, int64_t end) {
    std::vector<float> result;
    for (size_t row = 0; row < values.size() / static_cast<size_t>(width); ++row) {
        const auto first = values.begin() + static_cast<std::ptrdiff_t>(row * width);
        result.insert(result.end(), first + begin, first + end);
    }
    return result;
}

struct AttentionResults {
    std::vector<float> out, lse, dqkv;
};

// Forward then backward through the CPU backend of `precision` (its Backend ops).
AttentionResults run_cpu(Precision precision, const AttentionShape& s, const std::vector<float>& qkv,
                         const std::vector<float>& dout) {
    const std::unique_ptr<Backend> cpu = make_backend({"cpu", 0, precision, 0});
    const AttentionTensors t(*cpu, s, activation_dtype(precision), false);
    write_floats(*cpu, t.qkv, qkv);
    write_floats(*cpu, t.dout, dout);
    cpu->attention_forward(t.out, t.lse, t.qkv, t.params);
    cpu->attention_backward(t.dqkv, t.dout, t.qkv, t.lse, t.params);
    return {read_floats(*cpu, t.out), read_floats(*cpu, t.lse), read_floats(*cpu, t.dqkv)};
}

struct AttentionChecks {
    std::vector<Check> forward, backward;
};

// One problem of the shape's head dimension and heads with a partial last tile, on the GPU and on
// the CPU in fp32 (the reference) and in the run's precision.
AttentionChecks validate(const LabContext& context, const AttentionShape& timed) {
    AttentionShape s = timed;
    s.batch = 1;
    s.length = context.sizes == LabSizes::smoke ? 150 : 1000;
    if (!grouped(s)) s.heads = s.kv_heads = 2;
    const DType act = activation_dtype(context.precision);
    const int64_t C = int64_t{s.heads} * s.head_dim, width = int64_t{s.heads + 2 * s.kv_heads} * s.head_dim,
                  rows = int64_t{s.batch} * s.length;
    std::mt19937 generator(static_cast<uint32_t>(context.seed));
    std::normal_distribution<float> normal(0.f, 1.f);
    std::vector<float> qkv(static_cast<size_t>(rows * width)), dout(static_cast<size_t>(rows * C));
    for (float& value : qkv) value = 1.5f * normal(generator);  // scores of std ~2: a spread softmax
    for (float& value : dout) value = normal(generator);
    qkv = rounded(qkv, act);
    dout = rounded(dout, act);

    const AttentionResults reference = run_cpu(Precision::fp32, s, qkv, dout);
    const AttentionResults cpu = run_cpu(context.precision, s, qkv, dout);
    const AttentionTensors t(context.gpu, s, act, true);
    write_floats(context.gpu, t.qkv, qkv);
    write_floats(context.gpu, t.dout, dout);
    context.gpu.synchronize();  // the document bounds, on the backend's stream
    flash_forward(t, context.stream);
    flash_backward(t, context.stream);
    CUDA_CHECK(cudaStreamSynchronize(context.stream));
    const AttentionResults gpu{read_floats(context.gpu, t.out), read_floats(context.gpu, t.lse),
                               read_floats(context.gpu, t.dqkv)};

    AttentionChecks checks;
    checks.forward.push_back(judge("out", gpu.out, cpu.out, reference.out, act));
    checks.forward.push_back(judge("lse", gpu.lse, cpu.lse, reference.lse, DType::f32));
    const char* names[] = {"dq", "dk", "dv"};
    const int64_t bounds[] = {0, C, C + int64_t{s.kv_heads} * s.head_dim, width};
    for (int part = 0; part < 3; ++part)
        checks.backward.push_back(judge(names[part], columns(gpu.dqkv, width, bounds[part], bounds[part + 1]),
                                        columns(cpu.dqkv, width, bounds[part], bounds[part + 1]),
                                        columns(reference.dqkv, width, bounds[part], bounds[part + 1]), act));
    return checks;
}

}  // namespace

std::vector<AttentionShape> attention_shapes(LabSizes sizes, const std::vector<int>& lengths) {
    constexpr float kTheta = 10000.f;  // Llama's
    const bool smoke = sizes == LabSizes::smoke;
    const std::vector<int> all =
        smoke ? std::vector<int>{64, 150} : std::vector<int>{512, 1024, 2048, 4096, 8192};
    for (const int length : lengths)
        MIXGPT_REQUIRE(
            std::find(all.begin(), all.end(), length) != all.end(),
            format("kernel lab: attention at T=%d: the %s sizes have T in %s", length,
                   smoke ? "smoke" : "production", smoke ? "{64, 150}" : "{512, 1024, 2048, 4096, 8192}"));
    const auto wanted = [&](int length) {
        return lengths.empty() || std::find(lengths.begin(), lengths.end(), length) != lengths.end();
    };
    const int grouped_length = smoke ? 150 : 2048;
    const bool with_grouped =
        lengths.empty() || std::find(lengths.begin(), lengths.end(), grouped_length) != lengths.end();
    std::vector<AttentionShape> shapes;
    for (const int head_dim : {64, 128}) {
        for (const int length : lengths.empty() ? all : lengths) {
            if (smoke)
                shapes.push_back({2, length, 2, head_dim, 2});
            else
                shapes.push_back({kTokens / length, length, kHeads, head_dim, kHeads});
        }
        if (with_grouped) {
            if (smoke)
                shapes.push_back({1, grouped_length, 4, head_dim, 2, kTheta});
            else
                shapes.push_back(
                    {kTokens / grouped_length, grouped_length, kHeads, head_dim, kHeads / 3, kTheta});
        }
        if (smoke && wanted(150)) {
            shapes.push_back({2, 150, 2, head_dim, 2, 0.f, 40});
            shapes.push_back({2, 150, 2, head_dim, 2, 0.f, 0, 37});
        }
        if (smoke) continue;
        for (const int document_length : {512, 128})
            for (const int length : {1024, 4096, 8192})
                if (wanted(length))
                    shapes.push_back(
                        {kTokens / length, length, kHeads, head_dim, kHeads, 0.f, document_length});
        for (const int length : {1024, 4096, 8192})
            if (wanted(length)) shapes.push_back({kTokens / length, length, kHeads, head_dim, kHeads, 0.f, 0, 512});
    }
    return shapes;
}

std::vector<Row> attention_rows(const LabContext& context) {
    const DType act = activation_dtype(context.precision);
    MIXGPT_REQUIRE(
        cuda::flash_attention_supported(act, 64),
        format("kernel lab: flash attention needs bf16 or fp16, not %s", precision_name(context.precision)));
    std::vector<Row> rows;
    const std::vector<AttentionShape> all = attention_shapes(context.sizes, context.attention_lengths);
    for (const int head_dim : {64, 128}) {
        std::vector<std::string> variants;  // in the order of the shapes
        for (const AttentionShape& s : all)
            if (s.head_dim == head_dim &&
                std::find(variants.begin(), variants.end(), variant_name(s)) == variants.end())
                variants.push_back(variant_name(s));
        for (const std::string& variant : variants) {
            std::vector<AttentionShape> shapes;
            for (const AttentionShape& s : all)
                if (s.head_dim == head_dim && variant_name(s) == variant) shapes.push_back(s);
            const bool with_groups = grouped(shapes.front());
            const AttentionChecks checks = validate(context, shapes.front());
            log_info(format("flash attention%s hd %d: forward %s; backward %s", variant.c_str(), head_dim,
                            summarize(checks.forward).c_str(), summarize(checks.backward).c_str()));
            for (const AttentionShape& s : shapes) {
                const int sets = rotation_sets(AttentionTensors::forward_bytes(s, act), context.l2_bytes);
                std::vector<AttentionTensors> tensors;
                for (int i = 0; i < sets; ++i) tensors.emplace_back(context.gpu, s, act, true);
                context.gpu.synchronize();  // the allocations' zero fills and RoPE tables are done
                for (int i = 0; i < sets; ++i) {
                    const AttentionTensors& t = tensors[static_cast<size_t>(i)];
                    fill_random(t.qkv.data, act, t.qkv.numel(), context.seed + 2 * i, 1.f, 0.f,
                                context.stream);
                    fill_random(t.dout.data, act, t.dout.numel(), context.seed + 2 * i + 1, 1.f, 0.f,
                                context.stream);
                    flash_forward(t, context.stream);  // the backward's out and lse
                }
                const auto set = [&](int run) -> const AttentionTensors& {
                    return tensors[static_cast<size_t>(run % sets)];
                };
                const double forward_ms = time_with_events(
                    context.stream, [&](int run) { flash_forward(set(run), context.stream); },
                    context.timing);
                const double backward_ms = time_with_events(
                    context.stream, [&](int run) { flash_backward(set(run), context.stream); },
                    context.timing);
                std::vector<std::pair<std::string, int64_t>> dims = {
                    {"B", s.batch}, {"T", s.length}, {"H", s.heads}, {"head_dim", s.head_dim}};
                if (with_groups) {
                    dims.push_back({"kv_heads", s.kv_heads});
                    dims.push_back({"rope_theta", static_cast<int64_t>(s.rope_theta)});
                }
                if (s.document_length > 0) dims.push_back({"document_length", s.document_length});
                if (s.window > 0) dims.push_back({"window", s.window});
                const double flops = forward_flops(s);
                rows.push_back({std::string("flash_attention_forward") + variant, shape_text(s), dims,
                                forward_ms, Rate::tflop_per_s, flops / forward_ms / 1e9,
                                summarize(checks.forward), all_passed(checks.forward)});
                rows.push_back({std::string("flash_attention_backward") + variant, shape_text(s), dims,
                                backward_ms, Rate::tflop_per_s, 2.5 * flops / backward_ms / 1e9,
                                summarize(checks.backward), all_passed(checks.backward)});
            }
        }
    }
    return rows;
}

}  // namespace mixgpt::lab
