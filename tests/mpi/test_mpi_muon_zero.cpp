// --optimizer muon under ZeRO-1 (train/muon_zero_layout.h) on 2 ranks, CPU backend:
// - each rank keeps whole Muon matrices (round-robin per shape) and half of the AdamW elements, and
//   training with it equals the replicated optimizer bit for bit in bf16 and fp16 (Muon and the
//   AdamW groups alike; no clipping, whose factor depends on the norm's summation order), with 3
//   layers so that a shape has an odd number of matrices and its last chunk a missing slot;
// - a non-finite gradient on one rank, in a matrix the other rank owns, skips every rank's update;
// - checkpoints: a 2-rank ZeRO-1 checkpoint resumes on 2 ranks with ZeRO-1 bit for bit, and on 1
//   rank of twice the batch and on 2 ranks replicated up to float summation order (<= 1e-6,
//   fp32 Newton-Schulz); a 1-rank checkpoint resumes on 2 ranks with ZeRO-1 (<= 1e-6).
// The 1-rank runs are rank 0 alone, with a SingleProcessCommunicator, while rank 1 waits.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <limits>

#include "dist/mpi_communicator.h"
#include "model/checkpoint.h"
#include "tests/checkpoint_expectations.h"
#include "tests/mpi/mpi_test_support.h"
#include "train/loss_scaling.h"
#include "train/muon_zero_layout.h"
#include "train/train_step.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

using namespace testing_support;

GPTConfig three_layer_config() {
    GPTConfig config = unaligned_tiny_config();
    config.n_layer = 3;  // 3 matrices of each MLP shape: chunks of 2 with one missing slot
    return config;
}

std::optional<MuonPlan> muon_plan(DType ns_dtype) {
    MuonPlan plan;
    plan.hyper.ns_dtype = ns_dtype;
    plan.base_lr = plan.embedding_lr = plan.head_lr = 1e-3f;
    return plan;
}

std::vector<char> working_bytes(Backend& backend, GPT& model) {
    const TensorView working = model.working_parameters();  // (n) act
    std::vector<char> bytes(working.bytes());
    backend.copy_to_host(bytes.data(), working.data, bytes.size());
    return bytes;
}

class MuonZeroSixteenBitTest : public ::testing::TestWithParam<Precision> {};

TEST_P(MuonZeroSixteenBitTest, ShardedEqualsReplicatedBitForBit) {
    const Precision precision = GetParam();
    MpiCommunicator communicator(MPI_COMM_WORLD, kTestCollectiveTimeout);
    const GPTConfig config = three_layer_config();
    const std::unique_ptr<Backend> backend = cpu_backend(precision);
    DataParallelConfig sharded_parallel;
    sharded_parallel.shard_optimizer = true;
    GPT replicated(*backend, config, kBatch, kSeqLen, Recompute::none);
    GPT sharded(*backend, config, kBatch, kSeqLen, Recompute::none,
                TrainStep::sharding(config, communicator, sharded_parallel, true));
    const MuonZeroLayout layout(config, 2);
    int64_t matrices = 0;
    for (const MuonShape& shape : layout.shapes()) {
        matrices += static_cast<int64_t>(shape.matrices.size());
        EXPECT_EQ(shape.matrices.size() % 2,
                  shape.rows == shape.cols ? 0u : 1u);  // 12 square, 3 of the others
    }
    const auto matrices_kept = static_cast<int64_t>(layout.shard_groups(communicator.rank()).muon.size());
    EXPECT_EQ(matrices_kept, communicator.rank() == 0 ? 10 : 8);  // 6 + 2 + 2 and 6 + 1 + 1 of 18
    EXPECT_EQ(matrices, 18);
    EXPECT_LT(sharded.master_parameters().numel(), ParameterLayout(config).total());
    load_initial_parameters(replicated, 5);
    load_initial_parameters(sharded, 5);
    const LossScalePolicy scaling = parse_loss_scale("auto", precision);
    TrainStep replicated_step(replicated, communicator, 1, scaling.config(), scaling.initial_status(), {},
                              muon_plan(DType::bf16));
    TrainStep sharded_step(sharded, communicator, 1, scaling.config(), scaling.initial_status(),
                           sharded_parallel, muon_plan(DType::bf16));
    AdamWHyper hyper;
    hyper.max_grad_norm = 0;
    for (int step = 0; step < 3; ++step) {
        const std::vector<int32_t> windows = random_windows(
            kBatch, kSeqLen, config.vocab_size, static_cast<uint64_t>(10 * step + communicator.rank()));
        for (TrainStep* train_step : {&replicated_step, &sharded_step}) {
            train_step->begin();
            train_step->micro_step(windows.data());
            train_step->finish(hyper);
        }
        EXPECT_EQ(sharded_step.result().loss, replicated_step.result().loss) << "step " << step;
    }
    EXPECT_EQ(working_bytes(*backend, sharded), working_bytes(*backend, replicated));
    const std::vector<float> masters = sharded_step.gather_masters(0);
    EXPECT_EQ(masters, replicated_step.gather_masters(0));
    const OptimizerMoments got = sharded_step.gather_moments(0), expected = replicated_step.gather_moments(0);
    EXPECT_EQ(got.m,
              expected.m);  // Muon's momentum at the matrices' elements, AdamW's first moment elsewhere
    EXPECT_EQ(got.v, expected.v);
    EXPECT_EQ(sharded_step.read_status().loss_scale, replicated_step.read_status().loss_scale);
    EXPECT_EQ(sharded_step.read_status().optimizer_steps, 3);
}

INSTANTIATE_TEST_SUITE_P(Precisions, MuonZeroSixteenBitTest,
                         ::testing::Values(Precision::bf16, Precision::fp16),
                         [](const ::testing::TestParamInfo<Precision>& info) {
                             return std::string(precision_name(info.param));
                         });

// Rank 1 puts a NaN into its gradient of the third MLP input matrix, which rank 0 keeps (matrix 2
// of its shape): only through the exchange does it reach a norm.
TEST(MuonZeroTest, ANonFiniteGradientOnOneRankSkipsEveryRank) {
    MpiCommunicator communicator(MPI_COMM_WORLD, kTestCollectiveTimeout);
    const GPTConfig config = three_layer_config();
    const std::unique_ptr<Backend> backend = cpu_backend(Precision::fp32);
    DataParallelConfig parallel;
    parallel.shard_optimizer = true;
    GPT model(*backend, config, kBatch, kSeqLen, Recompute::none,
              TrainStep::sharding(config, communicator, parallel, true));
    load_initial_parameters(model, 5);
    const std::vector<float> before = read_floats(*backend, model.master_parameters());
    const LossScalePolicy no_scaling = parse_loss_scale("none", Precision::fp32);
    TrainStep step(model, communicator, 1, no_scaling.config(), no_scaling.initial_status(), parallel,
                   muon_plan(DType::f32));
    const MuonMatrix poisoned = MuonZeroLayout(config, 2).shapes()[1].matrices[2];
    ASSERT_EQ(poisoned.rows, 4 * config.n_embd);
    step.begin();
    if (communicator.rank() == 1)
        model.gradients().as<float>()[poisoned.offset] = std::numeric_limits<float>::quiet_NaN();
    step.micro_step(random_windows(kBatch, kSeqLen, config.vocab_size, 3 + communicator.rank()).data());
    step.finish(AdamWHyper{});
    const StepResult result = step.result();
    EXPECT_EQ(result.status.skip, 1);
    EXPECT_EQ(result.status.optimizer_steps, 0);
    EXPECT_EQ(read_floats(*backend, model.master_parameters()), before);
}

TrainOptions muon_run_options(const std::string& output_dir, int batch_size, bool zero) {
    TrainOptions options = tiny_train_options(output_dir);
    options.dataset = shared_tiny_dataset_path();
    options.model.n_layer = 3;
    options.batch_size = batch_size;
    options.steps = kSteps;
    options.checkpoint_interval = kSaveStep;
    options.eval_batches = 2;
    options.zero_optimizer = zero;
    options.optimizer = OptimizerKind::muon;
    options.muon_ns_dtype = DType::f32;
    options.collective_timeout = kTestCollectiveTimeout;
    return options;
}

Checkpoint final_checkpoint(const std::string& run_dir) {
    return read_checkpoint(checkpoint_path(checkpoint_directory(run_dir), kSteps));
}

// Final weights and momentum of `run_dir` against `straight_dir`'s, on rank 0.
void expect_close_final_state(const std::string& run_dir, const std::string& straight_dir) {
    if (world_rank() != 0) return;
    const Checkpoint got = final_checkpoint(run_dir), expected = final_checkpoint(straight_dir);
    EXPECT_LE(relative_error(got.parameters, expected.parameters), 1e-6);
    EXPECT_LE(relative_error(got.adam_m, expected.adam_m), 1e-6);
    EXPECT_TRUE(
        std::any_of(expected.adam_m.begin(), expected.adam_m.end(), [](float m) { return m != 0.f; }));
}

TEST(MuonZeroResumeTest, CheckpointsResumeOnAnyRankCountAndOptimizerSharding) {
    SharedTempDirectory directory("mixgpt_mpi_muon_zero_resume");
    const std::string two = directory.file("two_zero");
    const TrainResult straight = run_training(muon_run_options(two, 2, true));
    EXPECT_EQ(straight.steps_done, kSteps);

    const std::string again = directory.file("zero_from_zero");
    seed_run_directory(two, again);
    TrainOptions options = muon_run_options(again, 2, true);
    options.resume = "auto";
    EXPECT_EQ(run_training(options).last_val_loss, straight.last_val_loss);
    if (world_rank() == 0) test::expect_same_training_state(final_checkpoint(again), final_checkpoint(two));

    const std::string replicated = directory.file("replicated_from_zero");
    seed_run_directory(two, replicated);
    options = muon_run_options(replicated, 2, false);
    options.resume = "auto";
    run_training(options);
    expect_close_final_state(replicated, two);

    const std::string one = directory.file("one_from_zero");
    seed_run_directory(two, one);
    on_rank0_alone([&] {
        TrainOptions alone_options = muon_run_options(one, 4, false);
        alone_options.resume = "auto";
        SingleProcessCommunicator alone;
        EXPECT_EQ(run_training(alone_options, alone).steps_done, kSteps);
    });
    expect_close_final_state(one, two);

    const std::string single = directory.file("single");
    on_rank0_alone([&] {
        SingleProcessCommunicator alone;
        EXPECT_EQ(run_training(muon_run_options(single, 4, false), alone).steps_done, kSteps);
    });
    const std::string zero_from_single = directory.file("zero_from_single");
    seed_run_directory(single, zero_from_single);
    options = muon_run_options(zero_from_single, 2, true);
    options.resume = "auto";
    run_training(options);
    expect_close_final_state(zero_from_single, single);
}

}  // namespace
}  // namespace mixgpt
