// ZeRO-1 over NCCL on the CUDA simulator, 2 ranks (linked into build/mixgpt_sim_mpi_tests only:
// it reads the simulated NCCL's call log). A training step of a model whose arena needs padding
// reduce-scatters every gradient bucket with ncclReduceScatter and all-gathers the working copy
// with ncclAllGather, each on 2 equal pieces that together cover the padded arena once; the only
// other collective is the all-reduce of the squared norm. No ncclReduce or ncclBroadcast.
// The suite's name holds "cuda" for `make test`'s 2-rank simulator run (scripts/run_tests.sh).
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "tests/cuda_sim/nccl_log.h"
#include "tests/mpi/mpi_test_support.h"
#include "dist/device_communicator.h"
#include "train/loss_scaling.h"
#include "dist/mpi_communicator.h"
#include "train/train_step.h"

namespace mixgpt {
namespace {

using namespace testing_support;

constexpr int kBatch = 2, kSeqLen = 16;

TEST(cudaSimNcclZero, StepUsesReduceScatterAndAllGatherOnEqualPieces) {
    ASSERT_GE(cuda_device_count(), kRanks) << "run with MIXGPT_CUDA_SIM_DEVICES=2";
    const std::unique_ptr<Backend> backend = make_backend({"cuda", world_rank(), Precision::bf16, 0});
    const std::unique_ptr<Communicator> nccl =
        make_nccl_communicator(std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, kTestCollectiveTimeout),
                               *backend, kTestCollectiveTimeout);
    const GPTConfig config = unaligned_tiny_config();
    DataParallelConfig parallel;
    parallel.shard_optimizer = true;
    parallel.bucket_bytes = 4096;
    GPT model(*backend, config, kBatch, kSeqLen, Recompute::none,
              TrainStep::sharding(config, *nccl, parallel));
    load_initial_parameters(model, 5);
    const int64_t n = model.layout().total(), arena = padded_elements(n, kRanks);
    ASSERT_GT(arena, n) << "the model's arena should need padding";
    const LossScalePolicy scaling = parse_loss_scale("auto", Precision::bf16);
    TrainStep step(model, *nccl, 1, scaling.config(), scaling.initial_status(), parallel);

    cuda_sim::clear_nccl_calls();
    step.begin();
    step.micro_step(
        random_windows(kBatch, kSeqLen, config.vocab_size, 3 + static_cast<uint64_t>(world_rank())).data());
    step.finish(AdamWHyper{});
    step.result();
    const std::vector<cuda_sim::NcclCall> calls = cuda_sim::nccl_calls();

    std::map<std::string, int> counted;
    std::vector<size_t> scattered, gathered;
    for (const cuda_sim::NcclCall& call : calls) {
        ++counted[call.name];
        if (call.name == "ncclReduceScatter") {
            EXPECT_EQ(call.type, ncclFloat32);
            scattered.push_back(call.count);
        } else if (call.name == "ncclAllGather") {
            EXPECT_EQ(call.type, ncclBfloat16);  // the working copy
            gathered.push_back(call.count);
        } else {
            EXPECT_EQ(call.name, "ncclAllReduce");
            EXPECT_EQ(call.count, 1u);  // the squared norm
        }
    }
    EXPECT_EQ(counted["ncclAllReduce"], 1);
    EXPECT_GT(counted["ncclReduceScatter"], 10);  // 4 KiB buckets
    EXPECT_EQ(gathered, scattered);               // the same ranges
    size_t per_rank = 0;
    for (size_t count : scattered) {
        EXPECT_EQ(count % ShardLayout::kAlignment, 0u);
        per_rank += count;
    }
    EXPECT_EQ(per_rank * kRanks, static_cast<size_t>(arena));  // each piece of the padded arena once
    if (world_rank() == 0)
        std::printf(
            "NCCL call log of one ZeRO-1 step: %d ncclReduceScatter (fp32), %d ncclAllGather (bf16), "
            "%d ncclAllReduce; %zu elements per rank, %lld parameters padded to %lld\n",
            counted["ncclReduceScatter"], counted["ncclAllGather"], counted["ncclAllReduce"], per_rank,
            static_cast<long long>(n), static_cast<long long>(arena));
}

}  // namespace
}  // namespace mixgpt
