// Data parallelism without a second process: when gradients are exchanged (only after the last
// micro-step, in buckets), ZeRO-1 on one rank equals the replicated optimizer bit for bit, the
// launch is recognised from the launcher's environment, and a loader position saved with one
// global batch converts to another. The multi-rank tests are in tests/mpi/.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>

#include "core/error.h"
#include "tests/test_train_support.h"
#include "train/loader_rebatch.h"
#include "train/loss_scaling.h"
#include "train/mpi_launch.h"
#include "train/train_step.h"

namespace mixgpt {
namespace {

using namespace testing_support;

// Rank 0 of a pretended world of 2 that leaves data alone and records each collective.
class RecordingCommunicator final : public Communicator {
public:
    std::map<std::string, int> calls;

    int rank() const override { return 0; }
    int world_size() const override { return 2; }
    int local_rank() const override { return 0; }
    std::string describe() const override { return "recording"; }
    void all_reduce(TensorView, Reduction) override { ++calls["all_reduce"]; }
    void reduce_scatter_mean(TensorView, const std::vector<int64_t>&) override { ++calls["reduce_scatter"]; }
    void all_gather(TensorView, const std::vector<int64_t>&) override { ++calls["all_gather"]; }
    void wait() override { ++calls["wait"]; }
    void broadcast_host(void*, size_t, int) override { ++calls["broadcast_host"]; }
    void all_reduce_sum_host(double*, int) override { ++calls["all_reduce_sum_host"]; }
    void gather_host(const float*, float*, const std::vector<int64_t>&, int) override {
        ++calls["gather_host"];
    }
    std::vector<std::string> all_gather_text(const std::string& text) override { return {text, text}; }
    void barrier() override { ++calls["barrier"]; }
};

class TrainDataParallelStepTest : public ::testing::TestWithParam<bool> {};

TEST_P(TrainDataParallelStepTest, ExchangesGradientsOnlyAfterTheLastMicroStepInBuckets) {
    const bool sharded = GetParam();
    const GPTConfig config = tiny_config();
    const std::unique_ptr<Backend> backend = cpu_backend(Precision::bf16);
    GPT model(*backend, config, 2, 16, Recompute::none);
    load_initial_parameters(model, 5);
    RecordingCommunicator communicator;
    const LossScalePolicy no_scaling = parse_loss_scale("none", Precision::bf16);
    DataParallelConfig parallel;
    parallel.shard_optimizer = sharded;
    parallel.bucket_bytes = 4096;
    TrainStep step(model, communicator, 3, no_scaling.config(), no_scaling.initial_status(), parallel);
    step.begin();
    for (int micro = 0; micro < 3; ++micro)
        step.micro_step(random_windows(2, 16, config.vocab_size, micro).data());
    EXPECT_TRUE(communicator.calls.empty());

    step.finish(AdamWHyper{});
    const int64_t n = model.layout().total();
    const int gradient_buckets = static_cast<int>((n + 1023) / 1024);  // 4 KiB of f32
    const int working_buckets = static_cast<int>((n + 2047) / 2048);   // 4 KiB of bf16
    const std::map<std::string, int> expected =
        sharded ? std::map<std::string, int>{{"reduce_scatter", gradient_buckets},
                                             {"all_reduce", 1},  // the squared norm
                                             {"all_gather", working_buckets},
                                             {"wait", 3}}
                : std::map<std::string, int>{{"all_reduce", gradient_buckets}, {"wait", 1}};
    EXPECT_EQ(communicator.calls, expected);
    EXPECT_GT(gradient_buckets, 10);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, TrainDataParallelStepTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                             return info.param ? "zero1" : "replicated";
                         });

TEST(TrainDataParallelTest, ShardedOnOneRankEqualsReplicatedBitForBit) {
    const GPTConfig config = tiny_config();
    const std::unique_ptr<Backend> backend = cpu_backend(Precision::bf16);
    GPT replicated(*backend, config, 2, 16, Recompute::none),
        sharded(*backend, config, 2, 16, Recompute::none);
    load_initial_parameters(replicated, 5);
    load_initial_parameters(sharded, 5);
    SingleProcessCommunicator alone;
    const LossScalePolicy scaling = parse_loss_scale("dynamic", Precision::bf16);
    DataParallelConfig parallel;
    parallel.shard_optimizer = true;
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
    EXPECT_EQ(read_floats(*backend, sharded.master_parameters()),
              read_floats(*backend, replicated.master_parameters()));
    EXPECT_EQ(sharded_step.gather_moments(0).v, replicated_step.gather_moments(0).v);
    const StepStatus a = sharded_step.read_status(), b = replicated_step.read_status();
    EXPECT_EQ(a.grad_norm_squared, b.grad_norm_squared);
    EXPECT_EQ(a.optimizer_steps, 3);
    EXPECT_EQ(b.optimizer_steps, 3);
}

// Sets the launchers' variables for its lifetime, restoring what was there.
class LaunchEnvironment {
public:
    static constexpr const char* kNames[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_NTASKS",
                                             "SLURM_STEP_ID"};
    explicit LaunchEnvironment(const std::vector<const char*>& set) {
        for (const char* name : kNames) {
            const char* value = std::getenv(name);
            saved_[name] = value != nullptr ? std::optional<std::string>(value) : std::nullopt;
            unsetenv(name);
        }
        for (const char* name : set) setenv(name, "2", 1);
    }
    ~LaunchEnvironment() {
        for (const auto& [name, value] : saved_) {
            if (value)
                setenv(name.c_str(), value->c_str(), 1);
            else
                unsetenv(name.c_str());
        }
    }

private:
    std::map<std::string, std::optional<std::string>> saved_;
};

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
        LaunchEnvironment environment(variables);
        EXPECT_EQ(launched_by_mpi(), launched) << variables.size() << " variables";
    }
}

TEST(TrainDataParallelTest, LoaderPositionsConvertBetweenGlobalBatches) {
    const LoaderState saved{1, 4, 9, 100, 2};  // epoch 1, 8 windows in, global batch 2
    const LoaderState converted = rebatch_loader_state(saved, LoaderState{0, 0, 9, 100, 4});
    EXPECT_EQ(converted.to_vector(), (std::vector<int64_t>{1, 2, 9, 100, 4}));
    EXPECT_EQ(rebatch_loader_state(saved, LoaderState{0, 0, 9, 100, 2}).to_vector(), saved.to_vector());
    // 8 windows into an epoch of 10 windows = 2 batches of 4: the next epoch starts.
    EXPECT_EQ(rebatch_loader_state(LoaderState{1, 4, 9, 10, 2}, LoaderState{0, 0, 9, 10, 4}).to_vector(),
              (std::vector<int64_t>{2, 0, 9, 10, 4}));
    try {
        rebatch_loader_state(LoaderState{0, 3, 9, 100, 2}, LoaderState{0, 0, 9, 100, 4});
        FAIL() << "no error";
    } catch (const Error& error) {
        EXPECT_NE(std::string(error.what())
                      .find("6 windows into epoch 0, not a multiple of this run's global "
                            "batch of 4 windows"),
                  std::string::npos)
            << error.what();
    }
    EXPECT_THROW(rebatch_loader_state(saved, LoaderState{0, 0, 9, 99, 4}), Error);
}

}  // namespace
}  // namespace mixgpt
