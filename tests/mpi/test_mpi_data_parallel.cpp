// Data parallelism is exact up to float summation order: on the CPU backend, 2 ranks with B
// windows each give the same losses, updated weights and AdamW moments as 1 rank with all 2B
// (FP32, relative norm error <= 1e-6), with the optimizer replicated or sharded (ZeRO-1), with
// and without gradient accumulation, with the buckets exchanged during the last backward pass
// (overlapped) or after it. The 1-rank reference runs in the same process on each rank,
// with a SingleProcessCommunicator. Buckets of 4 KiB make ~30 of them, each cut into 2 equal
// pieces on ZeRO-1's padded arena (the tiny model's arena needs padding), and clipping is active (max norm
// 0.1), so the global norm is exercised. Replicas stay bit-identical, and a non-finite gradient on one rank
// skips the update on every rank; with --optimizer muon (replicated: Muon runs on the all-reduced
// gradients) too. In bf16 and fp16 (dynamic loss scaling), without clipping (whose factor
// depends on the norm's summation order), ZeRO-1 equals the replicated optimizer bit for bit, each rank
// keeping the fp32 masters of its shard only: the 16-bit working copy is gathered whole, and the masters
// gathered from the shards are the current ones.
//
// The equivalence test also runs on the CUDA backend with NCCL (its host side MPI) where every
// rank has a device of its own: on a multi-GPU host, and in `make test` on the CUDA simulator.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "tests/mpi/mpi_test_support.h"
#include "dist/device_communicator.h"
#include "train/loss_scaling.h"
#include "dist/mpi_communicator.h"
#include "train/train_step.h"

namespace mixgpt {
namespace {

using namespace testing_support;

struct ParallelCase {
    const char* name;
    bool shard_optimizer;
    int accumulation_steps;
    bool overlap;                // buckets exchanged during the last backward pass, or after it
    const char* device = "cpu";  // "cuda": device `rank`, gradients exchanged by NCCL
    bool llama = false;          // the Llama-style family (unaligned_tiny_llama_config) instead of GPT-2
    // --optimizer muon (fp32 Newton-Schulz): replicated, after the all-reduce; or under ZeRO-1, whole
    // matrices on their owners (train/muon_zero_layout.h)
    bool muon = false;
    // The Llama-style family with issue 38's model options: ReLU², parameter-free norms, the
    // embedding norm, zero-initialised projections, the logits soft-capped at 2.
    bool recipe = false;
    // GPT-2 with issue 39's masks: the document mask (every seventh token of the batch a separator)
    // with its learned positions restarted at each document (--positions document), and a sliding
    // window of 5 on the first layer (--window-pattern SL).
    bool masks = false;
};

constexpr int32_t kSeparator = 3;  // the masks cases' end-of-text token

void PrintTo(const ParallelCase& c, std::ostream* out) { *out << c.name; }

AdamWHyper clipped_hyper() {
    AdamWHyper hyper;
    hyper.learning_rate = 1e-3f;
    hyper.max_grad_norm = 0.1f;
    return hyper;
}

// rank 0's values on every rank.
std::vector<float> rank0_values(std::vector<float> values) {
    MPI_Bcast(values.data(), static_cast<int>(values.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
    return values;
}

class DataParallelTest : public ::testing::TestWithParam<ParallelCase> {};

TEST_P(DataParallelTest, TwoRanksOfBEqualOneRankOf2B) {
    const ParallelCase& c = GetParam();
    const bool on_cuda = std::strcmp(c.device, "cuda") == 0;
    if (on_cuda && cuda_device_count() < kRanks)
        GTEST_SKIP() << "needs a CUDA device for each of the " << kRanks << " ranks";
    const std::unique_ptr<Backend> backend =
        on_cuda ? make_backend({"cuda", world_rank(), Precision::fp32, 0}) : cpu_backend(Precision::fp32);
    std::unique_ptr<Communicator> mpi =
        std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, kTestCollectiveTimeout);
    const std::unique_ptr<Communicator> communicator =
        on_cuda ? make_nccl_communicator(std::move(mpi), *backend, kTestCollectiveTimeout) : std::move(mpi);
    SingleProcessCommunicator alone;
    ASSERT_EQ(communicator->world_size(), kRanks);
    const int rank = communicator->rank();
    GPTConfig config = c.llama || c.recipe ? unaligned_tiny_llama_config() : unaligned_tiny_config();
    if (c.masks) {
        config.document_separator = kSeparator;
        config.document_positions = true;
        config.attention_window = 5;
        config.set_window_pattern("SL");
    }
    if (c.recipe) {
        config.mlp = MlpKind::relu2;
        config.norm_weights = false;
        config.embedding_norm = true;
        config.qk_norm = true;
        config.zero_init_projections = true;
        config.logit_softcap = 2.f;
    }
    DataParallelConfig parallel;
    parallel.shard_optimizer = c.shard_optimizer;
    parallel.overlap = c.overlap;
    parallel.bucket_bytes = 4096;
    GPT ranked(*backend, config, kBatch, kSeqLen, Recompute::none,
               TrainStep::sharding(config, *communicator, parallel, c.muon));
    GPT whole(*backend, config, kRanks * kBatch, kSeqLen, Recompute::none);
    load_initial_parameters(ranked, 5);
    load_initial_parameters(whole, 5);
    const std::vector<float> initial = read_floats(*backend, whole.master_parameters());

    const LossScalePolicy no_scaling = parse_loss_scale("none", Precision::fp32);
    std::optional<MuonPlan> muon;
    if (c.muon) {
        muon.emplace();
        muon->hyper.ns_dtype = DType::f32;
        muon->base_lr = muon->embedding_lr = muon->head_lr = clipped_hyper().learning_rate;
    }
    TrainStep ranked_step(ranked, *communicator, c.accumulation_steps, no_scaling.config(),
                          no_scaling.initial_status(), parallel, muon);
    TrainStep whole_step(whole, alone, c.accumulation_steps, no_scaling.config(), no_scaling.initial_status(),
                         {}, muon);
    if (c.shard_optimizer) {
        int64_t owned = 0;
        for (const ElementRange& piece : ranked_step.owned()) owned += piece.count();
        EXPECT_LT(owned, ranked.layout().total());
    }

    const size_t row = kSeqLen + 1;
    for (int step = 0; step < 3; ++step) {
        ranked_step.begin();
        whole_step.begin();
        for (int micro = 0; micro < c.accumulation_steps; ++micro) {
            std::vector<int32_t> windows = random_windows(kRanks * kBatch, kSeqLen, config.vocab_size,
                                                          static_cast<uint64_t>(100 * step + micro));
            if (c.masks)
                for (size_t i = 0; i < windows.size(); i += 7) windows[i] = kSeparator;
            whole_step.micro_step(windows.data());
            ranked_step.micro_step(windows.data() + static_cast<size_t>(rank) * kBatch * row);
        }
        ranked_step.finish(clipped_hyper());
        whole_step.finish(clipped_hyper());
        const StepResult got = ranked_step.result(), expected = whole_step.result();
        EXPECT_NEAR(got.loss, expected.loss, 1e-6 * expected.loss) << "step " << step;
        EXPECT_NEAR(got.status.grad_norm_squared, expected.status.grad_norm_squared,
                    1e-6 * expected.status.grad_norm_squared);
        EXPECT_GT(std::sqrt(expected.status.grad_norm_squared),
                  clipped_hyper().max_grad_norm);  // clipping on
        EXPECT_EQ(got.status.skip, 0);
        EXPECT_EQ(got.status.optimizer_steps, step + 1);
    }

    const std::vector<float> masters = ranked_step.gather_masters(0);
    const OptimizerMoments moments = ranked_step.gather_moments(0);
    if (rank == 0) {
        const std::vector<float> expected_masters = read_floats(*backend, whole.master_parameters());
        const OptimizerMoments expected_moments = whole_step.download_moments();
        const double weight_error = relative_error(masters, expected_masters);
        EXPECT_LE(weight_error, 1e-6);
        EXPECT_LE(relative_error(moments.m, expected_moments.m), 1e-6);
        EXPECT_LE(relative_error(moments.v, expected_moments.v), 1e-6);
        EXPECT_GT(relative_error(expected_masters, initial), 1e-4);  // the steps moved the weights
        std::printf("%s: relative error of weights %.3g, m %.3g, v %.3g\n", c.name, weight_error,
                    relative_error(moments.m, expected_moments.m),
                    relative_error(moments.v, expected_moments.v));
    }
    const std::vector<float> working = read_floats(*backend, ranked.working_parameters());
    EXPECT_EQ(working, rank0_values(working));  // the replicas are identical
}

INSTANTIATE_TEST_SUITE_P(
    Optimizers, DataParallelTest,
    ::testing::Values(ParallelCase{"replicated", false, 1, true},
                      ParallelCase{"replicated_accumulation", false, 3, true},
                      ParallelCase{"replicated_after_backward", false, 3, false},
                      ParallelCase{"zero1", true, 1, true}, ParallelCase{"zero1_accumulation", true, 3, true},
                      ParallelCase{"zero1_after_backward", true, 3, false},
                      ParallelCase{"cuda_replicated", false, 1, true, "cuda"},
                      ParallelCase{"cuda_replicated_accumulation", false, 3, true, "cuda"},
                      ParallelCase{"cuda_replicated_after_backward", false, 3, false, "cuda"},
                      ParallelCase{"cuda_zero1", true, 1, true, "cuda"},
                      ParallelCase{"cuda_zero1_accumulation", true, 3, true, "cuda"},
                      ParallelCase{"cuda_zero1_after_backward", true, 3, false, "cuda"},
                      ParallelCase{"llama_replicated_accumulation", false, 3, true, "cpu", true},
                      ParallelCase{"llama_zero1_accumulation", true, 3, true, "cpu", true},
                      ParallelCase{"cuda_llama_zero1_accumulation", true, 3, true, "cuda", true},
                      ParallelCase{"muon_replicated_accumulation", false, 3, true, "cpu", false, true},
                      ParallelCase{"llama_muon_replicated", false, 1, true, "cpu", true, true},
                      ParallelCase{"cuda_muon_replicated_accumulation", false, 3, true, "cuda", false, true},
                      ParallelCase{"muon_zero1_accumulation", true, 3, true, "cpu", false, true},
                      ParallelCase{"llama_muon_zero1", true, 1, true, "cpu", true, true},
                      ParallelCase{"cuda_muon_zero1_accumulation", true, 3, true, "cuda", false, true},
                      ParallelCase{"recipe_zero1_accumulation", true, 3, true, "cpu", false, false, true},
                      ParallelCase{"cuda_recipe_zero1_accumulation", true, 3, true, "cuda", false, false, true},
                      ParallelCase{"masks_zero1_accumulation", true, 3, true, "cpu", false, false, false, true},
                      ParallelCase{"cuda_masks_zero1_accumulation", true, 3, true, "cuda", false, false, false,
                                   true}),
    [](const ::testing::TestParamInfo<ParallelCase>& info) { return info.param.name; });

class DataParallelSkipTest : public ::testing::TestWithParam<bool> {};

// Rank 1's gradients get a NaN in rank 0's shard (element 0, in wte, which the backward pass adds
// to): the step is skipped on both ranks, and the weights stay as they were.
TEST_P(DataParallelSkipTest, ANonFiniteGradientOnOneRankSkipsEveryRank) {
    MpiCommunicator communicator(MPI_COMM_WORLD, kTestCollectiveTimeout);
    const GPTConfig config = unaligned_tiny_config();
    const std::unique_ptr<Backend> backend = cpu_backend(Precision::fp32);
    DataParallelConfig parallel;
    parallel.shard_optimizer = GetParam();
    parallel.bucket_bytes = 4096;
    GPT model(*backend, config, kBatch, kSeqLen, Recompute::none,
              TrainStep::sharding(config, communicator, parallel));
    load_initial_parameters(model, 5);
    const std::vector<float> before = read_floats(*backend, model.master_parameters());
    const LossScalePolicy no_scaling = parse_loss_scale("none", Precision::fp32);
    TrainStep step(model, communicator, 1, no_scaling.config(), no_scaling.initial_status(), parallel);
    step.begin();
    if (communicator.rank() == 1) model.gradients().as<float>()[0] = std::numeric_limits<float>::quiet_NaN();
    step.micro_step(random_windows(kBatch, kSeqLen, config.vocab_size, 3 + communicator.rank()).data());
    step.finish(clipped_hyper());
    const StepResult result = step.result();
    EXPECT_EQ(result.status.skip, 1);
    EXPECT_EQ(result.status.skipped_steps, 1);
    EXPECT_EQ(result.status.optimizer_steps, 0);
    EXPECT_EQ(read_floats(*backend, model.master_parameters()), before);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, DataParallelSkipTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                             return info.param ? "zero1" : "replicated";
                         });

class DataParallelSixteenBitTest : public ::testing::TestWithParam<Precision> {};

TEST_P(DataParallelSixteenBitTest, ShardedEqualsReplicatedBitForBit) {
    const Precision precision = GetParam();
    MpiCommunicator communicator(MPI_COMM_WORLD, kTestCollectiveTimeout);
    const GPTConfig config = unaligned_tiny_config();
    const std::unique_ptr<Backend> backend = cpu_backend(precision);
    DataParallelConfig parallel;
    parallel.bucket_bytes = 4096;
    DataParallelConfig sharded_parallel = parallel;
    sharded_parallel.shard_optimizer = true;
    const int64_t n = ParameterLayout(config).total();
    GPT replicated(*backend, config, kBatch, kSeqLen, Recompute::none);
    GPT sharded(*backend, config, kBatch, kSeqLen, Recompute::none,
                TrainStep::sharding(config, communicator, sharded_parallel));
    EXPECT_EQ(sharded.master_parameters().numel(), padded_elements(n, kRanks) / kRanks);
    load_initial_parameters(replicated, 5);
    load_initial_parameters(sharded, 5);
    const LossScalePolicy scaling = parse_loss_scale("auto", precision);
    TrainStep replicated_step(replicated, communicator, 1, scaling.config(), scaling.initial_status(),
                              parallel);
    parallel = sharded_parallel;
    TrainStep sharded_step(sharded, communicator, 1, scaling.config(), scaling.initial_status(), parallel);
    AdamWHyper hyper;
    hyper.learning_rate = 1e-3f;
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
    const auto working_bytes = [&](GPT& model) {
        const TensorView working = model.working_parameters();  // (n) bf16 or fp16
        std::vector<char> bytes(working.bytes());
        backend->copy_to_host(bytes.data(), working.data, bytes.size());
        return bytes;
    };
    EXPECT_EQ(working_bytes(sharded), working_bytes(replicated));
    const std::vector<float> masters = sharded_step.gather_masters(0);
    const std::vector<float> expected_masters = replicated_step.gather_masters(0);
    EXPECT_EQ(masters, expected_masters);
    EXPECT_EQ(sharded_step.gather_moments(0).v, replicated_step.gather_moments(0).v);
    EXPECT_EQ(sharded_step.read_status().loss_scale, replicated_step.read_status().loss_scale);
}

INSTANTIATE_TEST_SUITE_P(Precisions, DataParallelSixteenBitTest,
                         ::testing::Values(Precision::bf16, Precision::fp16),
                         [](const ::testing::TestParamInfo<Precision>& info) {
                             return std::string(precision_name(info.param));
                         });

}  // namespace
}  // namespace mixgpt
