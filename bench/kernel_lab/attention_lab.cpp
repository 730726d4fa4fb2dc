#include "bench/kernel_lab/attention_lab.h"

#include <random>
#include <string>

#include "bench/kernel_lab/lab_check.h"
#include "bench/kernel_lab/lab_fill.h"
#include "core/cuda_check.h"
#include "core/log.h"
#include "kernels/cuda/flash_attention.h"

namespace mixgpt::lab {
namespace {

constexpr int kTokens = 16384;
constexpr int kHeads = 12;

double forward_flops(const AttentionShape& s) {
    return 4.0 * s.batch * s.heads * static_cast<double>(s.length) * s.length * s.head_dim / 2;
}

std::string shape_text(const AttentionShape& s) {
    return format("B=%d T=%d H=%d hd=%d", s.batch, s.length, s.heads, s.head_dim);
}

// One attention problem's tensors in backend memory.
struct AttentionTensors {
    AttentionTensors(Backend& backend, const AttentionShape& s, DType act) {
        const int64_t B = s.batch, T = s.length, H = s.heads, C = H * s.head_dim;
        qkv = make(backend, act, {B, T, 3 * C});
        out = make(backend, act, {B, T, C});
        dout = make(backend, act, {B, T, C});
        dqkv = make(backend, act, {B, T, 3 * C});
        lse = make(backend, DType::f32, {B, H, T});
        delta = make(backend, DType::f32, {B, H, T});
    }
    // What a forward reads and writes (qkv, out, lse): the smallest working set of the timed
    // kernels, so rotating past it rotates past the backward's too.
    static size_t forward_bytes(const AttentionShape& s, DType act) {
        const size_t rows = static_cast<size_t>(s.batch) * s.length,
                     C = static_cast<size_t>(s.heads) * s.head_dim;
        return rows * 4 * C * dtype_size(act) + rows * s.heads * sizeof(float);
    }

    TensorView qkv, out, dout, dqkv, lse, delta;

private:
    TensorView make(Backend& backend, DType dtype, std::initializer_list<int64_t> shape) {
        TensorView view(nullptr, dtype, shape);
        buffers_.push_back(backend.allocate(view.bytes()));
        view.data = buffers_.back().data();
        return view;
    }
    std::vector<Buffer> buffers_;
};

void flash_forward(const AttentionTensors& t, int heads, cudaStream_t stream) {
    cuda::flash_attention_forward(t.out, t.lse, t.qkv, multi_head_attention(heads), TensorView(), stream);
}

void flash_backward(const AttentionTensors& t, int heads, cudaStream_t stream) {
    cuda::flash_attention_backward(t.dqkv, t.dout, t.qkv, t.lse, t.delta, multi_head_attention(heads),
                                   TensorView(), stream);
}

// Columns [part*C, (part+1)*C) of each row of a (rows, 3C) tensor.
std::vector<float> qkv_part(const std::vector<float>& values, int64_t C, int part) {
    std::vector<float> result;
    for (size_t row = 0; row < values.size() / static_cast<size_t>(3 * C); ++row) {
        const auto begin = values.begin() + static_cast<std::ptrdiff_t>(row * 3 * C + part * C);
        result.insert(result.end(), begin, begin + C);
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
    const AttentionTensors t(*cpu, s, activation_dtype(precision));
    write_floats(*cpu, t.qkv, qkv);
    write_floats(*cpu, t.dout, dout);
    cpu->attention_forward(t.out, t.lse, t.qkv, multi_head_attention(s.heads));
    cpu->attention_backward(t.dqkv, t.dout, t.qkv, t.lse, multi_head_attention(s.heads));
    return {read_floats(*cpu, t.out), read_floats(*cpu, t.lse), read_floats(*cpu, t.dqkv)};
}

struct AttentionChecks {
    std::vector<Check> forward, backward;
};

// One problem of this head dimension with a partial last tile, on the GPU and on the CPU in
// fp32 (the reference) and in the run's precision.
AttentionChecks validate(const LabContext& context, int head_dim) {
    const AttentionShape s{1, context.sizes == LabSizes::smoke ? 150 : 1000, 2, head_dim};
    const DType act = activation_dtype(context.precision);
    const int64_t C = s.heads * head_dim, rows = int64_t{s.batch} * s.length;
    std::mt19937 generator(static_cast<uint32_t>(context.seed));
    std::normal_distribution<float> normal(0.f, 1.f);
    std::vector<float> qkv(static_cast<size_t>(rows * 3 * C)), dout(static_cast<size_t>(rows * C));
    for (float& value : qkv) value = 1.5f * normal(generator);  // scores of std ~2: a spread softmax
    for (float& value : dout) value = normal(generator);
    qkv = rounded(qkv, act);
    dout = rounded(dout, act);

    const AttentionResults reference = run_cpu(Precision::fp32, s, qkv, dout);
    const AttentionResults cpu = run_cpu(context.precision, s, qkv, dout);
    const AttentionTensors t(context.gpu, s, act);
    write_floats(context.gpu, t.qkv, qkv);
    write_floats(context.gpu, t.dout, dout);
    flash_forward(t, s.heads, context.stream);
    flash_backward(t, s.heads, context.stream);
    CUDA_CHECK(cudaStreamSynchronize(context.stream));
    const AttentionResults gpu{read_floats(context.gpu, t.out), read_floats(context.gpu, t.lse),
                               read_floats(context.gpu, t.dqkv)};

    AttentionChecks checks;
    checks.forward.push_back(judge("out", gpu.out, cpu.out, reference.out, act));
    checks.forward.push_back(judge("lse", gpu.lse, cpu.lse, reference.lse, DType::f32));
    const char* names[] = {"dq", "dk", "dv"};
    for (int part = 0; part < 3; ++part)
        checks.backward.push_back(judge(names[part], qkv_part(gpu.dqkv, C, part), qkv_part(cpu.dqkv, C, part),
                                        qkv_part(reference.dqkv, C, part), act));
    return checks;
}

}  // namespace

std::vector<AttentionShape> attention_shapes(LabSizes sizes) {
    std::vector<AttentionShape> shapes;
    for (const int head_dim : {64, 128}) {
        if (sizes == LabSizes::smoke) {
            for (const int length : {64, 150}) shapes.push_back({2, length, 2, head_dim});
        } else {
            for (const int length : {512, 1024, 2048, 4096})
                shapes.push_back({kTokens / length, length, kHeads, head_dim});
        }
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
        const AttentionChecks checks = validate(context, head_dim);
        log_info(format("flash attention hd %d: forward %s; backward %s", head_dim,
                        summarize(checks.forward).c_str(), summarize(checks.backward).c_str()));
        for (const AttentionShape& s : attention_shapes(context.sizes)) {
            if (s.head_dim != head_dim) continue;
            const int sets = rotation_sets(AttentionTensors::forward_bytes(s, act), context.l2_bytes);
            std::vector<AttentionTensors> tensors;
            for (int i = 0; i < sets; ++i) tensors.emplace_back(context.gpu, s, act);
            context.gpu.synchronize();  // the allocations' zero fills are done
            for (int i = 0; i < sets; ++i) {
                const AttentionTensors& t = tensors[static_cast<size_t>(i)];
                fill_random(t.qkv.data, act, t.qkv.numel(), context.seed + 2 * i, 1.f, 0.f, context.stream);
                fill_random(t.dout.data, act, t.dout.numel(), context.seed + 2 * i + 1, 1.f, 0.f,
                            context.stream);
                flash_forward(t, s.heads, context.stream);  // the backward's out and lse
            }
            const auto set = [&](int run) -> const AttentionTensors& {
                return tensors[static_cast<size_t>(run % sets)];
            };
            const double forward_ms = time_with_events(
                context.stream, [&](int run) { flash_forward(set(run), s.heads, context.stream); },
                context.timing);
            const double backward_ms = time_with_events(
                context.stream, [&](int run) { flash_backward(set(run), s.heads, context.stream); },
                context.timing);
            const std::vector<std::pair<std::string, int64_t>> dims = {
                {"B", s.batch}, {"T", s.length}, {"H", s.heads}, {"head_dim", s.head_dim}};
            const double flops = forward_flops(s);
            rows.push_back({"flash_attention_forward", shape_text(s), dims, forward_ms, Rate::tflop_per_s,
                            flops / forward_ms / 1e9, summarize(checks.forward), all_passed(checks.forward)});
            rows.push_back({"flash_attention_backward", shape_text(s), dims, backward_ms, Rate::tflop_per_s,
                            2.5 * flops / backward_ms / 1e9, summarize(checks.backward),
                            all_passed(checks.backward)});
        }
    }
    return rows;
}

}  // namespace mixgpt::lab
