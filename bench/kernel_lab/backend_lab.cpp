#include "bench/kernel_lab/backend_lab.h"

#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <random>
#include <string>

#include "bench/kernel_lab/lab_check.h"
#include "bench/kernel_lab/lab_fill.h"
#include "core/cuda_check.h"
#include "core/log.h"

namespace mixgpt::lab {
namespace {

enum class Storage { act, f32, indices, status };
enum class Access { read, write, read_write };

// One argument of an op: how it is stored, its shape, how it is used and how it is filled.
struct TensorSpec {
    const char* name;
    Storage storage;
    std::vector<int64_t> shape;
    Access access;
    float std = 1.f;  // random fill: uniform of this std around `offset`; 0 std and 0 offset: zeros
    float offset = 0.f;
    int32_t bound = 0;  // indices: uniform in [0, bound)
};

// The sizes ops are built at: small ones to validate (and to time in a smoke run), GPT-2 124M
// ones to time.
struct Sizes {
    int64_t rows;               // B·T for LayerNorm, RMSNorm and SwiGLU
    int64_t channels;           // C
    int64_t ffn;                // F of SwiGLU: a Llama-style block of width C = 768 has F = 8C/3 = 2048
    int64_t logit_rows;         // rows of the classifier
    int vocabulary;             // V
    int64_t padded_vocabulary;  // Vp
    int64_t parameters;         // n of the optimizer
};

constexpr Sizes kValidationSizes{64, 768, 2048, 32, 1000, 1024, 100000};
constexpr Sizes kTimedSizes{16384, 768, 2048, 8192, 50257, 50304, 124475904};
constexpr float kRmsNormEpsilon = 1e-5f;

struct OpSpec {
    std::string kernel;
    std::function<std::vector<TensorSpec>(const Sizes&)> tensors;
    std::function<std::string(const Sizes&)> shape;
    std::function<void(Backend&, const std::vector<TensorView>&, const Sizes&)> run;
};

StepStatus* status_of(const TensorView& view) { return static_cast<StepStatus*>(view.data); }

AdamWHyper adamw_hyper() {
    AdamWHyper hyper;
    hyper.learning_rate = 6e-4f;
    return hyper;
}

std::vector<OpSpec> op_specs() {
    using V = std::vector<TensorView>;
    const auto rows_shape = [](const Sizes& s) {
        return format("N=%lld C=%lld", static_cast<long long>(s.rows), static_cast<long long>(s.channels));
    };
    std::vector<OpSpec> specs;
    specs.push_back({"layernorm_forward",
                     [](const Sizes& s) {
                         return std::vector<TensorSpec>{
                             {"out", Storage::act, {s.rows, s.channels}, Access::write},
                             {"mean", Storage::f32, {s.rows}, Access::write},
                             {"rstd", Storage::f32, {s.rows}, Access::write},
                             {"inp", Storage::act, {s.rows, s.channels}, Access::read},
                             {"weight", Storage::act, {s.channels}, Access::read, 0.1f, 1.f},
                             {"bias", Storage::act, {s.channels}, Access::read, 0.1f}};
                     },
                     rows_shape,
                     [](Backend& b, const V& t, const Sizes&) {
                         b.layernorm_forward(t[0], t[1], t[2], t[3], t[4], t[5]);
                     }});
    specs.push_back({"residual_layernorm_forward",
                     [](const Sizes& s) {
                         return std::vector<TensorSpec>{
                             {"residual_out", Storage::act, {s.rows, s.channels}, Access::write},
                             {"out", Storage::act, {s.rows, s.channels}, Access::write},
                             {"mean", Storage::f32, {s.rows}, Access::write},
                             {"rstd", Storage::f32, {s.rows}, Access::write},
                             {"residual_in", Storage::act, {s.rows, s.channels}, Access::read},
                             {"branch", Storage::act, {s.rows, s.channels}, Access::read},
                             {"weight", Storage::act, {s.channels}, Access::read, 0.1f, 1.f},
                             {"bias", Storage::act, {s.channels}, Access::read, 0.1f}};
                     },
                     rows_shape,
                     [](Backend& b, const V& t, const Sizes&) {
                         b.residual_layernorm_forward(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]);
                     }});
    specs.push_back({"layernorm_backward",
                     [](const Sizes& s) {
                         return std::vector<TensorSpec>{
                             {"dinp", Storage::act, {s.rows, s.channels}, Access::read_write},
                             {"dweight", Storage::f32, {s.channels}, Access::read_write, 0.f},
                             {"dbias", Storage::f32, {s.channels}, Access::read_write, 0.f},
                             {"dout", Storage::act, {s.rows, s.channels}, Access::read},
                             {"inp", Storage::act, {s.rows, s.channels}, Access::read},
                             {"weight", Storage::act, {s.channels}, Access::read, 0.1f, 1.f},
                             {"mean", Storage::f32, {s.rows}, Access::read, 0.1f},
                             {"rstd", Storage::f32, {s.rows}, Access::read, 0.1f, 1.f}};
                     },
                     rows_shape,
                     [](Backend& b, const V& t, const Sizes&) {
                         b.layernorm_backward(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]);
                     }});
    specs.push_back({"rmsnorm_forward",
                     [](const Sizes& s) {
                         return std::vector<TensorSpec>{
                             {"out", Storage::act, {s.rows, s.channels}, Access::write},
                             {"rstd", Storage::f32, {s.rows}, Access::write},
                             {"inp", Storage::act, {s.rows, s.channels}, Access::read},
                             {"weight", Storage::act, {s.channels}, Access::read, 0.1f, 1.f}};
                     },
                     rows_shape,
                     [](Backend& b, const V& t, const Sizes&) {
                         b.rmsnorm_forward(t[0], t[1], t[2], t[3], kRmsNormEpsilon);
                     }});
    specs.push_back({"residual_rmsnorm_forward",
                     [](const Sizes& s) {
                         return std::vector<TensorSpec>{
                             {"residual_out", Storage::act, {s.rows, s.channels}, Access::write},
                             {"out", Storage::act, {s.rows, s.channels}, Access::write},
                             {"rstd", Storage::f32, {s.rows}, Access::write},
                             {"residual_in", Storage::act, {s.rows, s.channels}, Access::read},
                             {"branch", Storage::act, {s.rows, s.channels}, Access::read},
                             {"weight", Storage::act, {s.channels}, Access::read, 0.1f, 1.f}};
                     },
                     rows_shape,
                     [](Backend& b, const V& t, const Sizes&) {
                         b.residual_rmsnorm_forward(t[0], t[1], t[2], t[3], t[4], t[5], kRmsNormEpsilon);
                     }});
    specs.push_back({"rmsnorm_backward",
                     [](const Sizes& s) {
                         return std::vector<TensorSpec>{
                             {"dinp", Storage::act, {s.rows, s.channels}, Access::read_write},
                             {"dweight", Storage::f32, {s.channels}, Access::read_write, 0.f},
                             {"dout", Storage::act, {s.rows, s.channels}, Access::read},
                             {"inp", Storage::act, {s.rows, s.channels}, Access::read},
                             {"weight", Storage::act, {s.channels}, Access::read, 0.1f, 1.f},
                             {"rstd", Storage::f32, {s.rows}, Access::read, 0.1f, 1.f}};
                     },
                     rows_shape,
                     [](Backend& b, const V& t, const Sizes&) {
                         b.rmsnorm_backward(t[0], t[1], t[2], t[3], t[4], t[5]);
                     }});
    // QK-norm on the qkv rows of multi-head attention with head width 64 (GPT-2 124M: 12 heads):
    // (rows, 1, 3C), the 2C/64 query and key heads normalised in place.
    const auto qk_heads = [](const Sizes& s) { return static_cast<int>(s.channels / 64); };
    const auto qk_shape = [](const Sizes& s) {
        return format("N=%lld H=%lld hd=64", static_cast<long long>(s.rows), static_cast<long long>(s.channels / 64));
    };
    specs.push_back({"qk_norm_forward",
                     [](const Sizes& s) {
                         return std::vector<TensorSpec>{
                             {"qkv", Storage::act, {s.rows, 1, 3 * s.channels}, Access::read_write},
                             {"rstd", Storage::f32, {s.rows, 1, 2 * s.channels / 64}, Access::write}};
                     },
                     qk_shape,
                     [qk_heads](Backend& b, const V& t, const Sizes& s) {
                         b.qk_norm_forward(t[0], t[1], qk_heads(s), qk_heads(s), kRmsNormEpsilon);
                     }});
    specs.push_back({"qk_norm_backward",
                     [](const Sizes& s) {
                         return std::vector<TensorSpec>{
                             {"dqkv", Storage::act, {s.rows, 1, 3 * s.channels}, Access::read_write},
                             {"qkv", Storage::act, {s.rows, 1, 3 * s.channels}, Access::read},
                             {"rstd", Storage::f32, {s.rows, 1, 2 * s.channels / 64}, Access::read, 0.1f, 1.f}};
                     },
                     qk_shape,
                     [qk_heads](Backend& b, const V& t, const Sizes& s) {
                         b.qk_norm_backward(t[0], t[1], t[2], qk_heads(s), qk_heads(s));
                     }});
    const auto ffn_shape = [](const Sizes& s) {
        return format("M=%lld F=%lld", static_cast<long long>(s.rows), static_cast<long long>(s.ffn));
    };
    specs.push_back({"swiglu_forward",
                     [](const Sizes& s) {
                         return std::vector<TensorSpec>{
                             {"out", Storage::act, {s.rows, s.ffn}, Access::write},
                             {"gate_up", Storage::act, {s.rows, 2 * s.ffn}, Access::read, 2.f}};
                     },
                     ffn_shape, [](Backend& b, const V& t, const Sizes&) { b.swiglu_forward(t[0], t[1]); }});
    specs.push_back({"swiglu_backward",
                     [](const Sizes& s) {
                         return std::vector<TensorSpec>{
                             {"dgate_up", Storage::act, {s.rows, 2 * s.ffn}, Access::write},
                             {"dout", Storage::act, {s.rows, s.ffn}, Access::read},
                             {"gate_up", Storage::act, {s.rows, 2 * s.ffn}, Access::read, 2.f}};
                     },
                     ffn_shape,
                     [](Backend& b, const V& t, const Sizes&) { b.swiglu_backward(t[0], t[1], t[2]); }});
    specs.push_back(
        {"classifier (with gradient)",
         [](const Sizes& s) {
             return std::vector<TensorSpec>{
                 {"losses", Storage::f32, {s.logit_rows}, Access::write},
                 {"logits", Storage::act, {s.logit_rows, s.padded_vocabulary}, Access::read_write, 2.f},
                 {"targets", Storage::indices, {s.logit_rows}, Access::read, 0.f, 0.f, s.vocabulary}};
         },
         [](const Sizes& s) {
             return format("N=%lld V=%d Vp=%lld", static_cast<long long>(s.logit_rows), s.vocabulary,
                           static_cast<long long>(s.padded_vocabulary));
         },
         [](Backend& b, const V& t, const Sizes& s) {
             b.classifier(t[0], TensorView(), t[1], t[2], {s.vocabulary}, true,
                          1.f / static_cast<float>(s.logit_rows), nullptr);
         }});
    // The same with nanochat's soft-cap of 15 and a z-loss of 1e-4 (issue 38): the tanh of every
    // logit in both passes and one more f32 output per row.
    specs.push_back(
        {"classifier (with gradient, softcap 15, z-loss)",
         [](const Sizes& s) {
             return std::vector<TensorSpec>{
                 {"losses", Storage::f32, {s.logit_rows}, Access::write},
                 {"z_losses", Storage::f32, {s.logit_rows}, Access::write},
                 {"logits", Storage::act, {s.logit_rows, s.padded_vocabulary}, Access::read_write, 20.f},
                 {"targets", Storage::indices, {s.logit_rows}, Access::read, 0.f, 0.f, s.vocabulary}};
         },
         [](const Sizes& s) {
             return format("N=%lld V=%d Vp=%lld", static_cast<long long>(s.logit_rows), s.vocabulary,
                           static_cast<long long>(s.padded_vocabulary));
         },
         [](Backend& b, const V& t, const Sizes& s) {
             b.classifier(t[0], t[1], t[2], t[3], {s.vocabulary, 15.f, 1e-4f}, true,
                          1.f / static_cast<float>(s.logit_rows), nullptr);
         }});
    const auto parameters_shape = [](const Sizes& s) {
        return format("n=%lld", static_cast<long long>(s.parameters));
    };
    specs.push_back(
        {"grad_norm_squared",
         [](const Sizes& s) {
             return std::vector<TensorSpec>{{"status", Storage::status, {8}, Access::write},
                                            {"grads", Storage::f32, {s.parameters}, Access::read, 0.01f}};
         },
         parameters_shape,
         [](Backend& b, const V& t, const Sizes&) { b.grad_norm_squared(status_of(t[0]), t[1]); }});
    specs.push_back({"adamw_step",
                     [](const Sizes& s) {
                         return std::vector<TensorSpec>{
                             {"params", Storage::f32, {s.parameters}, Access::read_write, 0.02f},
                             {"grads", Storage::f32, {s.parameters}, Access::read, 0.01f},
                             {"m", Storage::f32, {s.parameters}, Access::read_write, 0.001f},
                             {"v", Storage::f32, {s.parameters}, Access::read_write, 1e-5f, 2e-5f},
                             {"working", Storage::act, {s.parameters}, Access::write},
                             {"status", Storage::status, {8}, Access::read_write}};
                     },
                     parameters_shape,
                     [](Backend& b, const V& t, const Sizes& s) {
                         b.adamw_step(t[0], t[1], t[2], t[3], t[4], s.parameters / 2, adamw_hyper(),
                                      status_of(t[5]));
                     }});
    return specs;
}

DType dtype_of(Storage storage, DType act) {
    switch (storage) {
        case Storage::act:
            return act;
        case Storage::indices:
            return DType::i32;
        case Storage::f32:
        case Storage::status:
            break;
    }
    return DType::f32;
}

// One op's tensors in one backend's memory (the status carries the f32 label: 8 words).
struct OpTensors {
    OpTensors(Backend& backend, const std::vector<TensorSpec>& specs, DType act) {
        for (const TensorSpec& spec : specs) {
            TensorView view(nullptr, dtype_of(spec.storage, act), {});
            view.rank = static_cast<int>(spec.shape.size());
            for (size_t i = 0; i < spec.shape.size(); ++i) view.shape[i] = spec.shape[i];
            buffers.push_back(backend.allocate(view.bytes()));
            view.data = buffers.back().data();
            views.push_back(view);
        }
    }
    std::vector<Buffer> buffers;
    std::vector<TensorView> views;
};

size_t moved_bytes(const std::vector<TensorSpec>& specs, DType act) {
    size_t bytes = 0;
    for (const TensorSpec& spec : specs) {
        if (spec.storage == Storage::status) continue;
        size_t size = dtype_size(dtype_of(spec.storage, act));
        for (int64_t d : spec.shape) size *= static_cast<size_t>(d);
        bytes += spec.access == Access::read_write ? 2 * size : size;
    }
    return bytes;
}

// Host values of every tensor as stored in `act`; int32 values for the indices.
struct HostInputs {
    std::vector<std::vector<float>> values;
    std::vector<std::vector<int32_t>> indices;
};

HostInputs host_inputs(const std::vector<TensorSpec>& specs, DType act, uint64_t seed) {
    std::mt19937 generator(static_cast<uint32_t>(seed));
    std::uniform_real_distribution<float> unit(-1.7320508f, 1.7320508f);  // variance 1
    HostInputs inputs;
    for (const TensorSpec& spec : specs) {
        int64_t count = 1;
        for (int64_t d : spec.shape) count *= d;
        std::vector<float> values(static_cast<size_t>(count));
        std::vector<int32_t> indices;
        if (spec.storage == Storage::indices) {
            std::uniform_int_distribution<int32_t> index(0, spec.bound - 1);
            for (int64_t i = 0; i < count; ++i) indices.push_back(index(generator));
        } else if (spec.storage != Storage::status) {
            for (float& value : values) value = spec.offset + spec.std * unit(generator);
            values = rounded(values, dtype_of(spec.storage, act));
        }
        inputs.values.push_back(std::move(values));
        inputs.indices.push_back(std::move(indices));
    }
    return inputs;
}

void upload(Backend& backend, const OpTensors& tensors, const std::vector<TensorSpec>& specs,
            const HostInputs& inputs) {
    for (size_t i = 0; i < specs.size(); ++i) {
        const TensorView& view = tensors.views[i];
        if (specs[i].storage == Storage::indices) {
            backend.copy_to_backend(view.data, inputs.indices[i].data(), view.bytes());
        } else if (specs[i].storage == Storage::status) {
            const StepStatus status;
            backend.copy_to_backend(view.data, &status, sizeof(status));
        } else {
            write_floats(backend, view, inputs.values[i]);
        }
    }
    backend.synchronize();
}

// The op's outputs on the GPU against the CPU backend in fp32 (reference) and in the run's precision.
std::vector<Check> validate(const LabContext& context, const OpSpec& op) {
    const DType act = activation_dtype(context.precision);
    const std::vector<TensorSpec> specs = op.tensors(kValidationSizes);
    const HostInputs inputs = host_inputs(specs, act, context.seed);
    const auto results = [&](Backend& backend, DType backend_act) {
        const OpTensors tensors(backend, specs, backend_act);
        upload(backend, tensors, specs, inputs);
        op.run(backend, tensors.views, kValidationSizes);
        backend.synchronize();
        std::vector<std::vector<float>> outputs;
        for (size_t i = 0; i < specs.size(); ++i) {
            if (specs[i].access == Access::read) continue;
            std::vector<float> values = read_floats(backend, tensors.views[i]);
            if (specs[i].storage == Storage::status) values.resize(1);  // grad_norm_squared
            outputs.push_back(std::move(values));
        }
        return outputs;
    };
    const std::unique_ptr<Backend> reference_backend = make_backend({"cpu", 0, Precision::fp32, 0});
    const std::unique_ptr<Backend> cpu_backend = make_backend({"cpu", 0, context.precision, 0});
    const auto reference = results(*reference_backend, DType::f32);
    const auto cpu = results(*cpu_backend, act);
    const auto gpu = results(context.gpu, act);
    std::vector<Check> checks;
    size_t output = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
        if (specs[i].access == Access::read) continue;
        const DType storage = dtype_of(specs[i].storage, act);
        checks.push_back(judge(specs[i].name, gpu[output], cpu[output], reference[output], storage));
        ++output;
    }
    return checks;
}

void fill_on_device(const LabContext& context, const OpTensors& tensors, const std::vector<TensorSpec>& specs,
                    uint64_t seed) {
    for (size_t i = 0; i < specs.size(); ++i) {
        const TensorSpec& spec = specs[i];
        const TensorView& view = tensors.views[i];
        if (spec.access == Access::write) continue;  // overwritten by the op
        if (spec.storage == Storage::indices) {
            fill_indices(static_cast<int32_t*>(view.data), view.numel(), spec.bound, seed + i,
                         context.stream);
        } else if (spec.storage == Storage::status) {
            const StepStatus status;
            CUDA_CHECK(
                cudaMemcpyAsync(view.data, &status, sizeof(status), cudaMemcpyHostToDevice, context.stream));
            CUDA_CHECK(cudaStreamSynchronize(context.stream));  // `status` leaves scope
        } else if (spec.std != 0.f || spec.offset != 0.f) {
            fill_random(view.data, view.dtype, view.numel(), seed + i, spec.std, spec.offset, context.stream);
        }
    }
}

}  // namespace

std::vector<Row> backend_rows(const LabContext& context) {
    const DType act = activation_dtype(context.precision);
    const Sizes& timed_sizes = context.sizes == LabSizes::smoke ? kValidationSizes : kTimedSizes;
    std::vector<Row> rows;
    for (const OpSpec& op : op_specs()) {
        // An op that throws (a launch error, say) gets an ERROR row and the next op runs.
        try {
            const std::vector<Check> checks = validate(context, op);
            log_info(format("%s: %s", op.kernel.c_str(), summarize(checks).c_str()));

            const std::vector<TensorSpec> specs = op.tensors(timed_sizes);
            const size_t bytes = moved_bytes(specs, act);
            const int sets = rotation_sets(bytes, context.l2_bytes);
            std::vector<OpTensors> tensors;
            for (int i = 0; i < sets; ++i) tensors.emplace_back(context.gpu, specs, act);
            context.gpu.synchronize();  // the allocations' zero fills are done
            for (int i = 0; i < sets; ++i)
                fill_on_device(context, tensors[static_cast<size_t>(i)], specs,
                               context.seed + 100 * static_cast<uint64_t>(i));
            CUDA_CHECK(cudaStreamSynchronize(context.stream));
            const double milliseconds = time_batched(
                [&](int run) {
                    op.run(context.gpu, tensors[static_cast<size_t>(run % sets)].views, timed_sizes);
                },
                [&] { context.gpu.synchronize(); }, context.timing);
            rows.push_back({op.kernel + " (backend)",
                            op.shape(timed_sizes),
                            {},
                            milliseconds,
                            Rate::gb_per_s,
                            static_cast<double>(bytes) / milliseconds / 1e6,
                            summarize(checks),
                            all_passed(checks)});
        } catch (const std::exception& error) {
            log_message(LogLevel::error, format("%s: %s", op.kernel.c_str(), error.what()));
            const double nan = std::numeric_limits<double>::quiet_NaN();
            rows.push_back({op.kernel + " (backend)",
                            op.shape(timed_sizes),
                            {},
                            nan,
                            Rate::gb_per_s,
                            nan,
                            std::string("ERROR: ") + error.what(),
                            false});
        }
    }
    return rows;
}

}  // namespace mixgpt::lab
