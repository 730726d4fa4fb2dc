// Data parallelism's NCCL path on one GPU: TrainStep over a 1-rank NCCL communicator (its host
// side a SingleProcessCommunicator, so no MPI is needed) issues every collective of a real run,
// on NCCL's own stream ordered with the backend's by events, and must give bit for bit the
// losses and weights of the run without communication, with the optimizer replicated or sharded
// (ZeRO-1) and the buckets exchanged during the backward pass or after it. A bucket started
// before its gradients are final, or a compute stream not waiting for the collectives, changes
// the bits. Multi-GPU equivalence (2 ranks x B = 1 rank x 2B) runs under mpirun
// (tests/mpi/ on the CPU; on GPUs under mpirun where a host has several).
#include <gtest/gtest.h>

#include <cstdint>

#include "tests/gpu/gpu_test_support.h"
#include "tests/test_train_support.h"
#include "dist/device_communicator.h"
#include "train/loss_scaling.h"
#include "train/train_step.h"

namespace mixgpt {
namespace {

using namespace testing_support;

constexpr int kBatch = 2, kSeqLen = 16, kAccumulation = 2, kSteps = 3;
constexpr double kTimeoutSeconds = 120;

struct ExchangeCase {
    Precision precision;
    bool sharded, overlap;
};

struct TrainedRun {
    std::vector<double> losses;
    std::vector<float> masters;
    std::vector<uint8_t> working;  // the working copy's bytes
};

// kSteps steps of the tiny model on the CUDA backend, over a 1-rank NCCL communicator or none.
TrainedRun train(const ExchangeCase& c, bool with_nccl) {
    const std::unique_ptr<Backend> backend = make_backend({"cuda", 0, c.precision, 0});
    const GPTConfig config = tiny_config();
    SingleProcessCommunicator alone;
    std::unique_ptr<Communicator> nccl;
    if (with_nccl)
        nccl =
            make_nccl_communicator(std::make_unique<SingleProcessCommunicator>(), *backend, kTimeoutSeconds);
    Communicator& communicator = with_nccl ? *nccl : static_cast<Communicator&>(alone);
    DataParallelConfig parallel;
    parallel.shard_optimizer = c.sharded;
    parallel.overlap = c.overlap;
    parallel.bucket_bytes = 4096;
    GPT model(*backend, config, kBatch, kSeqLen, Recompute::none,
              TrainStep::sharding(config, communicator, parallel));
    load_initial_parameters(model, 5);
    const LossScalePolicy scaling = parse_loss_scale("auto", c.precision);
    TrainStep step(model, communicator, kAccumulation, scaling.config(), scaling.initial_status(), parallel);
    AdamWHyper hyper;
    hyper.learning_rate = 1e-3f;
    TrainedRun run;
    for (int s = 0; s < kSteps; ++s) {
        run.losses.push_back(
            random_training_step(step, kAccumulation, kBatch, kSeqLen, config.vocab_size, s, hyper));
    }
    run.masters = step.gather_masters(0);
    const TensorView working = model.working_parameters();
    run.working.resize(working.bytes());
    backend->copy_to_host(run.working.data(), working.data, working.bytes());
    return run;
}

class GpuDataParallel : public ::testing::TestWithParam<ExchangeCase> {};

TEST_P(GpuDataParallel, OneRankNcclEqualsNoCommunicationBitForBit) {
    MIXGPT_GPU_OR_SKIP();
    const TrainedRun expected = train(GetParam(), false);
    const TrainedRun got = train(GetParam(), true);
    EXPECT_EQ(got.losses, expected.losses);
    EXPECT_EQ(got.masters, expected.masters);
    EXPECT_EQ(got.working, expected.working);
}

INSTANTIATE_TEST_SUITE_P(
    GpuExchanges, GpuDataParallel,
    ::testing::Values(ExchangeCase{Precision::fp32, false, true}, ExchangeCase{Precision::fp32, true, true},
                      ExchangeCase{Precision::bf16, false, true}, ExchangeCase{Precision::bf16, false, false},
                      ExchangeCase{Precision::bf16, true, true}, ExchangeCase{Precision::bf16, true, false},
                      ExchangeCase{Precision::fp16, false, true}, ExchangeCase{Precision::fp16, true, true}),
    [](const ::testing::TestParamInfo<ExchangeCase>& info) {
        return std::string(precision_name(info.param.precision)) +
               (info.param.sharded ? "_zero1" : "_replicated") +
               (info.param.overlap ? "_overlapped" : "_after_backward");
    });

}  // namespace
}  // namespace mixgpt
