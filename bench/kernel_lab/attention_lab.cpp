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

double forward_flops(const AttentionShape& s) {
    return 4.0 * s.batch * s.heads * static_cast<double>(s.length) * s.length * s.head_dim / 2;
}

std::string shape_text(const AttentionShape& s) {
    if (s.kv_heads == s.heads && s.rope_theta == 0.f)
        return format("B=%d T=%d H=%d hd=%d", s.batch, s.length, s.heads, s.head_dim);
    return format("B=%d T=%d H=%d Hkv=%d hd=%d theta=%g", s.batch, s.length, s.heads, s.kv_heads, s.head_dim,
                  static_cast<double>(s.rope_theta));
}

bool grouped(const AttentionShape& s) { return s.kv_heads != s.heads || s.rope_theta != 0.f; }

// One attention problem's tensors in backend memory.
struct AttentionTensors {
    // With `rope`, the RoPE table (kernels/rope_table.h) is uploaded when the shape has RoPE (the
    // flash kernels read it; the CPU backend keeps its own).
    AttentionTensors(Backend& backend, const AttentionShape& s, DType act, bool rope) {
        const int64_t B = s.batch, T = s.length, H = s.heads, C = H * s.head_dim;
        const int64_t width = int64_t{s.heads + 2 * s.kv_heads} * s.head_dim;
        qkv = make(backend, act, {B, T, width});
        out = make(backend, act, {B, T, C});
        dout = make(backend, act, {B, T, C});
        dqkv = make(backend, act, {B, T, width});
        lse = make(backend, DType::f32, {B, H, T});
        delta = make(backend, DType::f32, {B, H, T});
        if (!rope || s.rope_theta == 0.f) return;
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

private:
    TensorView make(Backend& backend, DType dtype, std::initializer_list<int64_t> shape) {
        TensorView view(nullptr, dtype, shape);
        buffers_.push_back(backend.allocate(view.bytes()));
        view.data = buffers_.back().data();
        return view;
    }
    std::vector<Buffer> buffers_;
};

void flash_forward(const AttentionTensors& t, const AttentionParams& params, cudaStream_t stream) {
    cuda::flash_attention_forward(t.out, t.lse, t.qkv, params, t.rope_cos_sin, stream);
}

void flash_backward(const AttentionTensors& t, const AttentionParams& params, cudaStream_t stream) {
    cuda::flash_attention_backward(t.dqkv, t.dout, t.qkv, t.lse, t.delta, params, t.rope_cos_sin, stream);
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
    cpu->attention_forward(t.out, t.lse, t.qkv, s.params());
    cpu->attention_backward(t.dqkv, t.dout, t.qkv, t.lse, s.params());
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
    flash_forward(t, s.params(), context.stream);
    flash_backward(t, s.params(), context.stream);
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
    const std::vector<int> all = smoke ? std::vector<int>{64, 150} : std::vector<int>{512, 1024, 2048, 4096};
    for (const int length : lengths)
        MIXGPT_REQUIRE(std::find(all.begin(), all.end(), length) != all.end(),
                       format("kernel lab: attention at T=%d: the %s sizes have T in %s", length,
                              smoke ? "smoke" : "production", smoke ? "{64, 150}" : "{512, 1024, 2048, 4096}"));
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
        if (!with_grouped) continue;
        if (smoke)
            shapes.push_back({1, grouped_length, 4, head_dim, 2, kTheta});
        else
            shapes.push_back({kTokens / grouped_length, grouped_length, kHeads, head_dim, kHeads / 3, kTheta});
        }
    return shapes;
}

std::vector<Row> attention_rows(const LabContext& context) {
    const DType act = activation_dtype(context.precision);
    MIXGPT_REQUIRE(
        cuda::flash_attention_supported(act, 64),
        format("kernel lab: flash attention needs bf16 or fp16, not %s", precision_name(context.precision)));
    std::vector<Row> rows;
    for (const int head_dim : {64, 128}) {
        for (const bool with_groups : {false, true}) {
            std::vector<AttentionShape> shapes;
            for (const AttentionShape& s : attention_shapes(context.sizes, context.attention_lengths))
                if (s.head_dim == head_dim && grouped(s) == with_groups) shapes.push_back(s);
            if (shapes.empty()) continue;
            const AttentionChecks checks = validate(context, shapes.front());
            const char* variant = with_groups ? " (GQA+RoPE)" : "";
            log_info(format("flash attention%s hd %d: forward %s; backward %s", variant, head_dim,
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
                    flash_forward(t, s.params(), context.stream);  // the backward's out and lse
                }
                const auto set = [&](int run) -> const AttentionTensors& {
                    return tensors[static_cast<size_t>(run % sets)];
                };
                const double forward_ms = time_with_events(
                    context.stream, [&](int run) { flash_forward(set(run), s.params(), context.stream); },
                    context.timing);
                const double backward_ms = time_with_events(
                    context.stream, [&](int run) { flash_backward(set(run), s.params(), context.stream); },
                    context.timing);
                std::vector<std::pair<std::string, int64_t>> dims = {
                    {"B", s.batch}, {"T", s.length}, {"H", s.heads}, {"head_dim", s.head_dim}};
                if (with_groups) {
                    dims.push_back({"kv_heads", s.kv_heads});
                    dims.push_back({"rope_theta", static_cast<int64_t>(s.rope_theta)});
                }
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
