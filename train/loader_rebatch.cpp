#include "train/loader_rebatch.h"

#include "core/error.h"
#include "core/log.h"

namespace mixgpt {

LoaderState rebatch_loader_state(const LoaderState& saved, const LoaderState& current) {
    if (saved.global_batch == current.global_batch) return saved;
    if (saved.global_batch == 0) return current;  // no data position (an imported model)
    MIXGPT_REQUIRE(saved.windows == current.windows && saved.global_batch > 0,
                   format("checkpoint: the loader state is for %lld windows, this run's split has %lld "
                          "(another dataset or seq_len)",
                          static_cast<long long>(saved.windows), static_cast<long long>(current.windows)));
    const int64_t windows_done = saved.next_batch * saved.global_batch;
    MIXGPT_REQUIRE(windows_done % current.global_batch == 0,
                   format("checkpoint: it stopped %lld windows into epoch %lld, not a multiple of this run's "
                          "global batch of %lld windows (ranks x batch-size); resume with a global batch "
                          "that divides it",
                          static_cast<long long>(windows_done), static_cast<long long>(saved.epoch),
                          static_cast<long long>(current.global_batch)));
    LoaderState state = current;
    state.seed = saved.seed;
    state.epoch = saved.epoch;
    state.next_batch = windows_done / current.global_batch;
    if (state.next_batch >= current.windows / current.global_batch) {
        state.epoch += 1;
        state.next_batch = 0;
    }
    return state;
}

}  // namespace mixgpt
