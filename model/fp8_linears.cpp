#include "model/fp8_linears.h"

#include <array>
#include <sstream>

#include "core/error.h"

namespace mixgpt {
namespace {

constexpr int kRolesPerBlock = 4;  // qkv, attention_output, mlp_input, mlp_output

Fp8Format backward_format(const std::string& format) {
    return format == "hybrid" ? Fp8Format::e5m2 : Fp8Format::e4m3;
}

}  // namespace

std::vector<bool> parse_bf16_layers(const std::string& text, int n_layer) {
    std::vector<bool> blocks(static_cast<size_t>(n_layer), false);
    std::istringstream items(text);
    std::string item;
    while (std::getline(items, item, ',')) {
        int layer = -1;
        if (item == "first") {
            layer = 0;
        } else if (item == "last") {
            layer = n_layer - 1;
        } else {
            size_t used = 0;
            try {
                layer = std::stoi(item, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            MIXGPT_REQUIRE(used == item.size() && !item.empty(),
                           "fp8-bf16-layers: '" + item + "' is not first, last or a block index");
        }
        MIXGPT_REQUIRE(layer >= 0 && layer < n_layer,
                       "fp8-bf16-layers: block " + item + " is outside 0.." + std::to_string(n_layer - 1));
        blocks[static_cast<size_t>(layer)] = true;
    }
    return blocks;
}

void check_fp8_options(const Fp8Options& options, int n_layer) {
    MIXGPT_REQUIRE(options.format == "hybrid" || options.format == "e4m3",
                   "fp8-format: '" + options.format + "' (expected hybrid or e4m3)");
    check_fp8_scaling_config(options.scaling);
    if (n_layer > 0) parse_bf16_layers(options.bf16_layers, n_layer);
}

Fp8Linears::Fp8Linears(Backend& backend, const Fp8Options& options, int n_layer)
    : backend_(backend), options_(options), n_layer_(n_layer) {
    check_fp8_options(options, n_layer);
    bf16_blocks_ = parse_bf16_layers(options.bf16_layers, n_layer);
    const int linears = kRolesPerBlock * n_layer + 1;
    forward_ = make_state(2 * linears, Fp8Format::e4m3);
    backward_ = make_state(linears, backward_format(options.format));
}

Fp8Linears::State Fp8Linears::make_state(int tensors, Fp8Format format) {
    State state;
    state.tensors = tensors;
    state.format = format;
    const Fp8ScalingState initial(tensors, format, options_.scaling);
    state.values = backend_.allocate(initial.flat().size() * sizeof(float));
    backend_.copy_to_backend(state.values.data(), initial.flat().data(), state.values.bytes());
    state.saturated = backend_.allocate(static_cast<size_t>(tensors) * sizeof(uint64_t));
    return state;
}

bool Fp8Linears::in_fp8(int layer, LinearRole role) const {
    if (role == LinearRole::head) return options_.head;
    return !bf16_blocks_[static_cast<size_t>(layer)];
}

int Fp8Linears::index(int layer, LinearRole role) const {
    if (role == LinearRole::head) return kRolesPerBlock * n_layer_;
    return kRolesPerBlock * layer + static_cast<int>(role);
}

Fp8TensorScaling Fp8Linears::slot(const State& state, int tensor) const {
    Fp8TensorScaling s;
    s.values = static_cast<float*>(state.values.data());
    s.saturated = static_cast<uint64_t*>(state.saturated.data());
    s.tensors = state.tensors;
    s.tensor = tensor;
    s.format = state.format;
    s.config = options_.scaling;
    return s;
}

std::vector<TensorView> Fp8Linears::amax_histories() const {
    if (options_.scaling.scaling != Fp8Scaling::delayed) return {};
    std::vector<TensorView> histories;
    for (const State* state : {&forward_, &backward_}) {
        // The flat form is [scale (T) | scale_inverse (T) | amax_history (T, H)].
        float* values = static_cast<float*>(state->values.data());
        histories.push_back(
            TensorView(values + 2 * state->tensors, DType::f32,
                       {static_cast<int64_t>(state->tensors) * options_.scaling.history_length}));
    }
    return histories;
}

void Fp8Linears::step_done() {
    if (keep_next_step_) {
        if (kept_step_)
            copy_into(*kept_step_);
        else
            kept_step_ = snapshot();
        keep_next_step_ = false;
    }
    if (options_.scaling.scaling != Fp8Scaling::delayed) return;
    backend_.fp8_update_delayed(slot(forward_, 0));
    backend_.fp8_update_delayed(slot(backward_, 0));
}

Fp8Linears::Snapshot Fp8Linears::snapshot() const {
    Snapshot kept{backend_.allocate(forward_.values.bytes()), backend_.allocate(forward_.saturated.bytes()),
                  backend_.allocate(backward_.values.bytes()), backend_.allocate(backward_.saturated.bytes())};
    copy_into(kept);
    return kept;
}

void Fp8Linears::copy_into(const Snapshot& kept) const {
    for (const auto& [live, copy] : paired_buffers(kept)) backend_.copy_within(copy->data(), live->data(), live->bytes());
}

std::array<std::pair<const Buffer*, const Buffer*>, 4> Fp8Linears::paired_buffers(const Snapshot& snapshot) const {
    return {{{&forward_.values, &snapshot.forward_values},
             {&forward_.saturated, &snapshot.forward_saturated},
             {&backward_.values, &snapshot.backward_values},
             {&backward_.saturated, &snapshot.backward_saturated}}};
}

void Fp8Linears::restore(const Snapshot& snapshot) {
    for (const auto& [live, kept] : paired_buffers(snapshot)) backend_.copy_within(live->data(), kept->data(), live->bytes());
}

std::vector<float> Fp8Linears::flat() const {
    const size_t forward = forward_.values.bytes() / sizeof(float),
                 backward = backward_.values.bytes() / sizeof(float);
    std::vector<float> values(forward + backward);
    backend_.copy_to_host(values.data(), forward_.values.data(), forward_.values.bytes());
    backend_.copy_to_host(values.data() + forward, backward_.values.data(), backward_.values.bytes());
    return values;
}

void Fp8Linears::load_flat(const std::vector<float>& values) {
    const size_t forward = forward_.values.bytes() / sizeof(float),
                 backward = backward_.values.bytes() / sizeof(float);
    MIXGPT_REQUIRE(values.size() == forward + backward,
                   "fp8 scaling state: " + std::to_string(values.size()) + " values, expected " +
                       std::to_string(forward + backward) + " (another model shape or amax history length)");
    // Checked as the states' own loads check them (finite, positive scales).
    Fp8ScalingState check_forward(forward_.tensors, forward_.format, options_.scaling);
    check_forward.load_flat(
        std::vector<float>(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(forward)));
    Fp8ScalingState check_backward(backward_.tensors, backward_.format, options_.scaling);
    check_backward.load_flat(
        std::vector<float>(values.begin() + static_cast<std::ptrdiff_t>(forward), values.end()));
    backend_.copy_to_backend(forward_.values.data(), values.data(), forward_.values.bytes());
    backend_.copy_to_backend(backward_.values.data(), values.data() + forward, backward_.values.bytes());
}

Fp8Saturation Fp8Linears::take_saturation() {
    std::vector<uint64_t> forward(static_cast<size_t>(forward_.tensors)),
        backward(static_cast<size_t>(backward_.tensors));
    backend_.copy_to_host(forward.data(), forward_.saturated.data(), forward_.saturated.bytes());
    backend_.copy_to_host(backward.data(), backward_.saturated.data(), backward_.saturated.bytes());
    backend_.fill_zero(forward_.saturated.data(), forward_.saturated.bytes());
    backend_.fill_zero(backward_.saturated.data(), backward_.saturated.bytes());
    Fp8Saturation counts;
    for (size_t i = 0; i < forward.size(); ++i) (i % 2 == 0 ? counts.inputs : counts.weights) += forward[i];
    for (uint64_t count : backward) counts.gradients += count;
    return counts;
}

std::vector<Fp8StepTensor> Fp8Linears::step_tensors() const {
    if (!kept_step_) return {};
    const auto host = [this](const Buffer& buffer, auto element) {
        std::vector<decltype(element)> values(buffer.bytes() / sizeof(element));
        backend_.copy_to_host(values.data(), buffer.data(), buffer.bytes());
        return values;
    };
    const std::vector<float> forward = host(kept_step_->forward_values, 0.f),
                             backward = host(kept_step_->backward_values, 0.f);
    const std::vector<uint64_t> forward_saturated = host(kept_step_->forward_saturated, uint64_t{0}),
                                backward_saturated = host(kept_step_->backward_saturated, uint64_t{0});
    const bool delayed = options_.scaling.scaling == Fp8Scaling::delayed;
    const int history = options_.scaling.history_length;
    // Tensor t of a state from its copy before the update: the flat form's values and the counts.
    const auto entry = [&](const State& state, const std::vector<float>& values, const std::vector<uint64_t>& saturated,
                           int t) {
        Fp8StepTensor tensor;
        tensor.scale = values[static_cast<size_t>(t)];
        tensor.amax = delayed ? values[static_cast<size_t>(2 * state.tensors + t * history)]
                              : fp8_scaled_max(state.format, options_.scaling.margin) / tensor.scale;
        tensor.saturated = saturated[static_cast<size_t>(t)];
        tensor.fp8_max = fp8_max(state.format);
        return tensor;
    };
    static const char* const kRoleNames[] = {"qkv", "attention_output", "mlp_input", "mlp_output", "head"};
    std::vector<Fp8StepTensor> tensors;
    for (int layer = 0; layer <= n_layer_; ++layer) {
        for (int r = 0; r <= kRolesPerBlock; ++r) {
            const auto role = static_cast<LinearRole>(r);
            if ((layer == n_layer_) != (role == LinearRole::head) || !in_fp8(layer, role)) continue;
            const int i = index(layer, role);
            const std::pair<const char*, Fp8StepTensor> kinds[] = {
                {"input", entry(forward_, forward, forward_saturated, 2 * i)},
                {"weight", entry(forward_, forward, forward_saturated, 2 * i + 1)},
                {"gradient", entry(backward_, backward, backward_saturated, i)}};
            for (const auto& [kind, measured] : kinds) {
                Fp8StepTensor tensor = measured;
                tensor.layer = role == LinearRole::head ? -1 : layer;
                tensor.role = kRoleNames[r];
                tensor.kind = kind;
                tensors.push_back(tensor);
            }
        }
    }
    return tensors;
}

}  // namespace mixgpt
