#include "train/loader_rebatch.h"

#include "core/error.h"
#include "core/log.h"

namespace mixgpt {

LoaderState rebatch_loader_state(const LoaderState& saved, const LoaderState& current) {
    if (saved.global_batch == current.global_batch) return saved;
    if (saved.global_batch == 0) return current;  // no data position (an imported model)
    if (!saved.source_rows.empty()) {
        // A mixture has no epochs: only the row count must divide into this run's global batches.
        MIXGPT_REQUIRE(
            saved.windows == current.windows && saved.source_rows.size() == current.source_rows.size(),
            "checkpoint: the loader state is for another mixture of datasets or another seq_len");
        const int64_t rows_done = saved.next_batch * saved.global_batch;
        MIXGPT_REQUIRE(
            rows_done % current.global_batch == 0,
            format("checkpoint: it stopped after %lld rows, not a multiple of this run's global batch of "
                   "%lld (ranks x batch-size)",
                   static_cast<long long>(rows_done), static_cast<long long>(current.global_batch)));
        LoaderState state = saved;
        state.global_batch = current.global_batch;
        state.next_batch = rows_done / current.global_batch;
        return state;
    }
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
