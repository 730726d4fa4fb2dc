#include "dist/checkpoint_broadcast.h"

#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "core/error.h"

namespace mixgpt {
namespace {

template <typename T>
void broadcast_value(Communicator& communicator, T& value, int root) {
    static_assert(std::is_trivially_copyable_v<T>, "broadcast as bytes");
    communicator.broadcast_host(&value, sizeof(T), root);
}

template <typename T>
void broadcast_vector(Communicator& communicator, std::vector<T>& values, int root) {
    uint64_t size = values.size();
    broadcast_value(communicator, size, root);
    values.resize(static_cast<size_t>(size));
    communicator.broadcast_host(values.data(), values.size() * sizeof(T), root);
}

void broadcast_string(Communicator& communicator, std::string& text, int root) {
    uint64_t size = text.size();
    broadcast_value(communicator, size, root);
    text.resize(static_cast<size_t>(size));
    communicator.broadcast_host(text.data(), text.size(), root);
}

void broadcast_spike_guard(Communicator& communicator, std::optional<SpikeGuardState>& state, int root) {
    uint8_t present = state.has_value() ? 1 : 0;
    broadcast_value(communicator, present, root);
    if (present == 0) return;
    if (!state) state.emplace();
    broadcast_vector(communicator, state->losses, root);
    broadcast_vector(communicator, state->grad_norms, root);
    broadcast_value(communicator, state->skips, root);
    broadcast_value(communicator, state->skips_in_a_row, root);
}

}  // namespace

std::string broadcast_text(Communicator& communicator, const std::string& text, int root) {
    std::string copy = text;
    broadcast_string(communicator, copy, root);
    return copy;
}

Checkpoint broadcast_checkpoint(Communicator& communicator, const std::function<Checkpoint()>& read,
                                int root) {
    Checkpoint checkpoint;
    std::string error;
    if (communicator.rank() == root) {
        try {
            checkpoint = read();
        } catch (const Error& failure) {
            error = failure.what();
        }
    }
    broadcast_string(communicator, error, root);
    if (!error.empty()) throw Error(error);

    broadcast_value(communicator, checkpoint.config, root);
    broadcast_string(communicator, checkpoint.tokenizer_path, root);
    broadcast_string(communicator, checkpoint.tokenizer_sha256, root);
    broadcast_value(communicator, checkpoint.precision, root);
    broadcast_value(communicator, checkpoint.step, root);
    broadcast_value(communicator, checkpoint.seed, root);
    broadcast_value(communicator, checkpoint.tokens_seen, root);
    broadcast_value(communicator, checkpoint.bad_steps_in_a_row, root);
    broadcast_vector(communicator, checkpoint.parameters, root);
    broadcast_vector(communicator, checkpoint.working_bits, root);
    broadcast_vector(communicator, checkpoint.adam_m, root);
    broadcast_vector(communicator, checkpoint.adam_v, root);
    broadcast_value(communicator, checkpoint.status, root);
    broadcast_vector(communicator, checkpoint.loader_state, root);
    broadcast_vector(communicator, checkpoint.fp8_scaling, root);
    broadcast_spike_guard(communicator, checkpoint.spike_guard, root);
    uint64_t option_count = checkpoint.options.size();
    broadcast_value(communicator, option_count, root);
    checkpoint.options.resize(static_cast<size_t>(option_count));
    for (auto& [name, value] : checkpoint.options) {
        broadcast_string(communicator, name, root);
        broadcast_string(communicator, value, root);
    }
    return checkpoint;
}

}  // namespace mixgpt
