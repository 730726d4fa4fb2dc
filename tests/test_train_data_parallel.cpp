// Data parallelism without a second process: when gradients are exchanged (in buckets, during the
// last micro-step's backward pass, each once final), ZeRO-1 on one rank equals the replicated optimizer bit
// for bit, the launch is recognised from the launcher's environment, and a loader position saved with one
// global batch converts to another. The multi-rank tests are in tests/mpi/.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <utility>

#include "core/error.h"
#include "tests/test_train_support.h"
#include "train/loader_rebatch.h"
#include "train/loss_scaling.h"
#include "dist/mpi_launch.h"
#include "train/train_step.h"

namespace mixgpt {
namespace {

using namespace testing_support;

// Rank 0 of a pretended world of 2 that leaves data alone and records each collective. Gradient
// collectives (those on the gradient arena) are recorded with a copy of their data and of the
// whole arena when they were started.
class RecordingCommunicator final : public Communicator {
public:
    struct GradientCollective {
        ElementRange range;         // of the gradient arena
        std::vector<float> values;  // its gradients when the collective started
        std::vector<float> arena;   // the whole arena then
    };
    std::map<std::string, int> calls;
    std::vector<GradientCollective> gradient_collectives;
    std::vector<int64_t> all_gather_counts;

    // Collectives on `gradients` (the whole arena) are gradient collectives.
    void watch(const TensorView& gradients) {
        gradients_ = gradients.as<float>();
        n_ = gradients.numel();
    }

    int rank() const override { return 0; }
    int world_size() const override { return 2; }
    int local_rank() const override { return 0; }
    std::string describe() const override { return "recording"; }
    void all_reduce(TensorView values, Reduction) override { record("all_reduce", values); }
    void reduce_scatter_mean(TensorView values) override { record("reduce_scatter", values); }
    void all_gather(TensorView values) override {
        ++calls["all_gather"];
        all_gather_counts.push_back(values.numel());
    }
    void join() override { ++calls["join"]; }
    void wait() override { ++calls["wait"]; }
    void broadcast_host(void*, size_t, int) override { ++calls["broadcast_host"]; }
    void all_reduce_sum_host(double*, int) override { ++calls["all_reduce_sum_host"]; }
    void gather_host(const float*, float*, const std::vector<int64_t>&, int) override {
        ++calls["gather_host"];
    }
    std::vector<std::string> all_gather_text(const std::string& text) override { return {text, text}; }
    void barrier() override { ++calls["barrier"]; }

private:
    void record(const char* collective, const TensorView& values) {
        ++calls[collective];
        const float* first = values.as<float>();
        if (first < gradients_ || first >= gradients_ + n_) return;  // the squared norm
        const int64_t begin = first - gradients_;
        gradient_collectives.push_back({{begin, begin + values.numel()},
                                        std::vector<float>(first, first + values.numel()),
                                        std::vector<float>(gradients_, gradients_ + n_)});
    }

    const float* gradients_ = nullptr;
    int64_t n_ = 0;
};

struct ExchangeCase {
    bool sharded, overlap;
};

class TrainDataParallelStepTest : public ::testing::TestWithParam<ExchangeCase> {};

// Every gradient is exchanged exactly once per step, in buckets, only in the last micro-step, and
// only once final; with overlap the first buckets start while the backward pass still has
// gradients to compute, without it only after the backward pass.
TEST_P(TrainDataParallelStepTest, ExchangesEveryGradientOnceWhenFinal) {
    const ExchangeCase exchange = GetParam();
    const GPTConfig config = unaligned_tiny_config();
    const std::unique_ptr<Backend> backend = cpu_backend(Precision::bf16);
    RecordingCommunicator communicator;
    DataParallelConfig parallel;
    parallel.shard_optimizer = exchange.sharded;
    parallel.overlap = exchange.overlap;
    parallel.bucket_bytes = 4096;
    GPT model(*backend, config, 2, 16, Recompute::none, TrainStep::sharding(config, communicator, parallel));
    load_initial_parameters(model, 5);
    communicator.watch(model.gradient_arena());
    const LossScalePolicy no_scaling = parse_loss_scale("none", Precision::bf16);
    const int64_t capacity = 4096 / sizeof(float);
    TrainStep step(model, communicator, 3, no_scaling.config(), no_scaling.initial_status(), parallel);
    step.begin();
    for (int micro = 0; micro < 2; ++micro)
        step.micro_step(random_windows(2, 16, config.vocab_size, micro).data());
    EXPECT_TRUE(communicator.calls.empty());
    step.micro_step(random_windows(2, 16, config.vocab_size, 2).data());
    step.finish(AdamWHyper{});
    step.result();

    const std::vector<float> final_gradients = read_floats(*backend, model.gradient_arena());
    const int64_t n = model.arena_elements();  // the parameters, and under ZeRO-1 the padding
    EXPECT_EQ(n > model.layout().total(), exchange.sharded) << "the tiny model's arena needs padding";
    std::vector<int> exchanged(static_cast<size_t>(n), 0);
    for (const auto& collective : communicator.gradient_collectives) {
        EXPECT_LE(collective.range.count(), capacity);
        if (exchange.sharded) {
            EXPECT_EQ(collective.range.count() % shard_granule(2), 0) << "2 equal pieces";
        }
        for (int64_t i = collective.range.begin; i < collective.range.end; ++i)
            ++exchanged[static_cast<size_t>(i)];
        const std::vector<float> final_values(final_gradients.begin() + collective.range.begin,
                                              final_gradients.begin() + collective.range.end);
        EXPECT_EQ(collective.values, final_values)
            << "elements [" << collective.range.begin << ", " << collective.range.end << ") not final";
    }
    EXPECT_EQ(std::count(exchanged.begin(), exchanged.end(), 1), n) << "each gradient exchanged once";
    ASSERT_GT(communicator.gradient_collectives.size(), 10u);
    const bool backward_went_on = communicator.gradient_collectives.front().arena != final_gradients;
    EXPECT_EQ(backward_went_on, exchange.overlap);

    const std::string gradient_collective = exchange.sharded ? "reduce_scatter" : "all_reduce";
    EXPECT_EQ(communicator.calls[gradient_collective],
              static_cast<int>(communicator.gradient_collectives.size()));
    if (exchange.sharded) {
        EXPECT_EQ(communicator.calls["all_reduce"], 1);  // the squared norm
        std::vector<int64_t> gradient_counts;            // the working copy is gathered over the same ranges
        for (const auto& collective : communicator.gradient_collectives)
            gradient_counts.push_back(collective.range.count());
        EXPECT_EQ(communicator.all_gather_counts, gradient_counts);
        EXPECT_EQ(communicator.calls["join"], 3);  // gradients, norm, working copy
    } else {
        EXPECT_EQ(communicator.calls["join"], 1);
    }
    EXPECT_EQ(communicator.calls["wait"], 1);  // in result(), never before
}

INSTANTIATE_TEST_SUITE_P(Exchanges, TrainDataParallelStepTest,
                         ::testing::Values(ExchangeCase{false, true}, ExchangeCase{false, false},
                                           ExchangeCase{true, true}, ExchangeCase{true, false}),
                         [](const ::testing::TestParamInfo<ExchangeCase>& info) {
                             return std::string(info.param.sharded ? "zero1" : "replicated") +
                                    (info.param.overlap ? "_overlapped" : "_after_backward");
                         });

TEST(TrainDataParallelTest, ShardedOnOneRankEqualsReplicatedBitForBit) {
    const GPTConfig config = tiny_config();
    const std::unique_ptr<Backend> backend = cpu_backend(Precision::bf16);
    SingleProcessCommunicator alone;
    DataParallelConfig parallel;
    parallel.shard_optimizer = true;
    GPT replicated(*backend, config, 2, 16, Recompute::none),
        sharded(*backend, config, 2, 16, Recompute::none, TrainStep::sharding(config, alone, parallel));
    load_initial_parameters(replicated, 5);
    load_initial_parameters(sharded, 5);
    const LossScalePolicy scaling = parse_loss_scale("dynamic", Precision::bf16);
    TrainStep replicated_step(replicated, alone, 1, scaling.config(), scaling.initial_status());
    TrainStep sharded_step(sharded, alone, 1, scaling.config(), scaling.initial_status(), parallel);
    AdamWHyper hyper;
    hyper.learning_rate = 1e-3f;
    hyper.stochastic_rounding = true;
    for (int i = 0; i < 3; ++i) {
        const std::vector<int32_t> windows = random_windows(2, 16, config.vocab_size, 40 + i);
        hyper.seed = 7 + i;
        for (TrainStep* step : {&replicated_step, &sharded_step}) {
            step->begin();
            step->micro_step(windows.data());
            step->finish(hyper);
        }
        EXPECT_EQ(sharded_step.result().loss, replicated_step.result().loss);
    }
    EXPECT_EQ(sharded_step.gather_masters(0), read_floats(*backend, replicated.master_parameters()));
    const auto working_bytes = [&](GPT& model) {
        const TensorView working = model.working_parameters();  // (n) bf16
        std::vector<char> bytes(working.bytes());
        backend->copy_to_host(bytes.data(), working.data, bytes.size());
        return bytes;
    };
    EXPECT_EQ(working_bytes(sharded), working_bytes(replicated));
    EXPECT_EQ(sharded_step.gather_moments(0).v, replicated_step.gather_moments(0).v);
    const StepStatus a = sharded_step.read_status(), b = replicated_step.read_status();
    EXPECT_EQ(a.grad_norm_squared, b.grad_norm_squared);
    EXPECT_EQ(a.optimizer_steps, 3);
    EXPECT_EQ(b.optimizer_steps, 3);
}

// The launchers' variables: those in `set` to "2", the others removed.
std::vector<std::pair<std::string, const char*>> launch_variables(const std::vector<const char*>& set) {
    std::vector<std::pair<std::string, const char*>> values;
    for (const char* name :
         {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_NTASKS", "SLURM_STEP_ID"}) {
        const bool chosen = std::any_of(set.begin(), set.end(),
                                        [&](const char* variable) { return std::string(variable) == name; });
        values.emplace_back(name, chosen ? "2" : nullptr);
    }
    return values;
}

TEST(TrainDataParallelTest, RecognisesTheLaunchersEnvironment) {
    const std::vector<std::pair<std::vector<const char*>, bool>> cases = {
        {{}, false},
        {{"SLURM_NTASKS"}, false},  // a batch script's shell, not an srun step
        {{"SLURM_NTASKS", "SLURM_STEP_ID"}, true},
        {{"OMPI_COMM_WORLD_SIZE"}, true},
        {{"PMI_SIZE"}, true},
        {{"PMIX_RANK"}, true},
    };
    for (const auto& [variables, launched] : cases) {
        const test::ScopedEnvironment environment(launch_variables(variables));
        EXPECT_EQ(launched_by_mpi(), launched) << variables.size() << " variables";
        const bool announces_size = launched && std::string(variables.front()) != "PMIX_RANK";
        EXPECT_EQ(launcher_world_size(), announces_size ? 2 : 1) << variables.size() << " variables";
    }
}

TEST(TrainDataParallelTest, LoaderPositionsConvertBetweenGlobalBatches) {
    const LoaderState saved =
        LoaderState::from_vector({1, 4, 9, 100, 2});  // epoch 1, 8 windows in, global batch 2
    const LoaderState converted = rebatch_loader_state(saved, LoaderState::from_vector({0, 0, 9, 100, 4}));
    EXPECT_EQ(converted.to_vector(), (std::vector<int64_t>{1, 2, 9, 100, 4}));
    EXPECT_EQ(rebatch_loader_state(saved, LoaderState::from_vector({0, 0, 9, 100, 2})).to_vector(),
              saved.to_vector());
    // 8 windows into an epoch of 10 windows = 2 batches of 4: the next epoch starts.
    EXPECT_EQ(rebatch_loader_state(LoaderState::from_vector({1, 4, 9, 10, 2}),
                                   LoaderState::from_vector({0, 0, 9, 10, 4}))
                  .to_vector(),
              (std::vector<int64_t>{2, 0, 9, 10, 4}));
    try {
        rebatch_loader_state(LoaderState::from_vector({0, 3, 9, 100, 2}),
                             LoaderState::from_vector({0, 0, 9, 100, 4}));
        FAIL() << "no error";
    } catch (const Error& error) {
        EXPECT_NE(std::string(error.what())
                      .find("6 windows into epoch 0, not a multiple of this run's global "
                            "batch of 4 windows"),
                  std::string::npos)
            << error.what();
    }
    EXPECT_THROW(rebatch_loader_state(saved, LoaderState::from_vector({0, 0, 9, 99, 4})), Error);
}

}  // namespace
}  // namespace mixgpt
