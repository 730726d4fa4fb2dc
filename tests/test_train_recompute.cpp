// Activation recomputation through the trainer's step: under none, selective and full the
// gradients, losses and updated weights are bit-identical on the CPU backend, and the memory
// plan shows what each policy saves.
#include <gtest/gtest.h>

#include "model/memory_plan.h"
#include "tests/test_train_support.h"
#include "dist/communicator.h"
#include "train/loss_scaling.h"
#include "train/train_step.h"

namespace mixgpt {
namespace {

using namespace testing_support;

struct StepOutcome {
    std::vector<float> gradients, weights;
    double loss = 0;
};

StepOutcome train_one_step(Precision precision, Recompute recompute, const std::vector<int32_t>& windows) {
    const GPTConfig config = tiny_config();
    const std::unique_ptr<Backend> backend = cpu_backend(precision);
    GPT model(*backend, config, 2, 16, recompute);
    load_initial_parameters(model, 21);
    SingleProcessCommunicator communicator;
    const LossScalePolicy policy = parse_loss_scale("auto", precision);
    TrainStep step(model, communicator, 2, policy.config(), policy.initial_status());
    step.begin();
    step.micro_step(windows.data());
    step.micro_step(windows.data() + 2 * 17);
    StepOutcome outcome;
    outcome.gradients = read_floats(*backend, model.gradients());
    AdamWHyper hyper;
    hyper.learning_rate = 1e-3f;
    step.finish(hyper);
    outcome.loss = step.result().loss;
    outcome.weights = read_floats(*backend, model.master_parameters());
    return outcome;
}

TEST(TrainRecomputeTest, GradientsAreBitIdenticalUnderEveryPolicy) {
    const std::vector<int32_t> windows = random_windows(4, 16, tiny_config().vocab_size, 4);
    for (Precision precision : {Precision::fp32, Precision::bf16, Precision::fp16}) {
        const StepOutcome reference = train_one_step(precision, Recompute::none, windows);
        for (Recompute recompute : {Recompute::selective, Recompute::full}) {
            const StepOutcome outcome = train_one_step(precision, recompute, windows);
            EXPECT_EQ(outcome.gradients, reference.gradients)
                << precision_name(precision) << " " << recompute_name(recompute);
            EXPECT_EQ(outcome.weights, reference.weights)
                << precision_name(precision) << " " << recompute_name(recompute);
            EXPECT_EQ(outcome.loss, reference.loss);
        }
    }
}

TEST(TrainRecomputeTest, MemoryPlanShowsTheSavings) {
    GPTConfig config = GPTConfig::preset("d12", 50257, 1024);
    for (Precision precision : {Precision::fp32, Precision::bf16}) {
        const MemoryPlan none = plan_memory(config, 8, 1024, precision, Recompute::none);
        const MemoryPlan selective = plan_memory(config, 8, 1024, precision, Recompute::selective);
        const MemoryPlan full = plan_memory(config, 8, 1024, precision, Recompute::full);
        EXPECT_GT(none.activations, selective.activations);
        EXPECT_GT(selective.activations, full.activations);
        EXPECT_EQ(none.parameters + none.gradients + none.optimizer_state + none.working_copy,
                  full.parameters + full.gradients + full.optimizer_state + full.working_copy);
        std::printf("d12 B=8 T=1024 %s activations: none %.0f MiB, selective %.0f MiB, full %.0f MiB\n",
                    precision_name(precision), static_cast<double>(none.activations) / (1 << 20),
                    static_cast<double>(selective.activations) / (1 << 20),
                    static_cast<double>(full.activations) / (1 << 20));
    }
}

}  // namespace
}  // namespace mixgpt
