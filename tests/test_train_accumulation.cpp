// Gradient accumulation: k = 4 micro-batches of B/4 give the same loss, gradients and updated
// weights as one batch of B (FP32, relative norm error <= 1e-6 each).
//
// The update alone (new - old weights) is printed, not asserted at 1e-6: AdamW's first step maps
// each gradient element g to about g / (|g| + eps), which magnifies the float rounding differences
// of near-zero gradient elements (measured ~1e-5 relative on this model).
#include <gtest/gtest.h>

#include "tests/test_train_support.h"
#include "train/communicator.h"
#include "train/loss_scaling.h"
#include "train/train_step.h"

namespace mixgpt {
namespace {

using namespace testing_support;

TEST(TrainAccumulationTest, FourMicroBatchesEqualOneBatch) {
    const GPTConfig config = tiny_config();
    const int batch = 8, seq_len = 16, k = 4;
    const std::unique_ptr<Backend> backend = cpu_backend(Precision::fp32);
    GPT whole(*backend, config, batch, seq_len, Recompute::none);
    GPT part(*backend, config, batch / k, seq_len, Recompute::none);
    load_initial_parameters(whole, 5);
    load_initial_parameters(part, 5);
    const std::vector<float> initial = read_floats(*backend, whole.master_parameters());
    const std::vector<int32_t> windows = random_windows(batch, seq_len, config.vocab_size, 9);

    SingleProcessCommunicator communicator;
    const LossScalePolicy no_scaling = parse_loss_scale("none", Precision::fp32);
    TrainStep one(whole, communicator, 1, no_scaling.config(), no_scaling.initial_status());
    TrainStep four(part, communicator, k, no_scaling.config(), no_scaling.initial_status());
    one.begin();
    one.micro_step(windows.data());
    four.begin();
    for (int i = 0; i < k; ++i)
        four.micro_step(windows.data() + static_cast<size_t>(i) * (batch / k) * (seq_len + 1));

    const std::vector<float> whole_gradients = read_floats(*backend, whole.gradients());
    const std::vector<float> part_gradients = read_floats(*backend, part.gradients());
    const double gradient_error = relative_error(part_gradients, whole_gradients);
    EXPECT_LE(gradient_error, 1e-6);

    AdamWHyper hyper;
    hyper.learning_rate = 1e-3f;
    one.finish(hyper);
    four.finish(hyper);
    const StepResult one_result = one.result(), four_result = four.result();
    EXPECT_NEAR(four_result.loss, one_result.loss, 1e-6 * one_result.loss);
    EXPECT_EQ(one_result.status.optimizer_steps, 1);
    EXPECT_EQ(four_result.status.optimizer_steps, 1);

    const std::vector<float> whole_weights = read_floats(*backend, whole.master_parameters());
    const std::vector<float> part_weights = read_floats(*backend, part.master_parameters());
    const double weight_error = relative_error(part_weights, whole_weights);
    EXPECT_LE(weight_error, 1e-6);
    EXPECT_GT(relative_error(whole_weights, initial), 1e-3);  // the step did move the weights

    std::vector<float> whole_update = whole_weights, part_update = part_weights;
    for (size_t i = 0; i < initial.size(); ++i) {
        whole_update[i] -= initial[i];
        part_update[i] -= initial[i];
    }
    std::printf("accumulation: relative error of gradients %.3g, weights %.3g, update alone %.3g\n",
                gradient_error, weight_error, relative_error(part_update, whole_update));
}

}  // namespace
}  // namespace mixgpt
