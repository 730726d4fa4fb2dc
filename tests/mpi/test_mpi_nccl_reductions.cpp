// NcclCommunicator's all-reduce in its three reductions (sum, mean, maximum) on 2 ranks, each on a
// device of its own (a multi-GPU host, or the simulator in `make test`), against values computed
// here: small integers and halves, so sums and means are exact; the maximum comes from rank 0 at
// even elements and from rank 1 at odd ones.
// The suite's name holds "cuda" for `make test`'s 2-rank simulator run (scripts/run_tests.sh).
#ifdef MIXGPT_WITH_NCCL
#include <gtest/gtest.h>

#include "dist/device_communicator.h"
#include "dist/mpi_communicator.h"
#include "tests/mpi/mpi_test_support.h"

namespace mixgpt {
namespace {

using namespace testing_support;

constexpr int kCount = 300;

float value_of(int rank, int i) { return (i + rank) % 2 == 0 ? 1000.f + static_cast<float>(i) : 0.5f - i; }

TEST(cudaNcclReductions, SumMeanAndMaximumOverTwoRanks) {
    if (cuda_device_count() < kRanks)
        GTEST_SKIP() << "needs a CUDA device for each of the " << kRanks << " ranks";
    const std::unique_ptr<Backend> backend = make_backend({"cuda", world_rank(), Precision::fp32, 0});
    const std::unique_ptr<Communicator> nccl =
        make_nccl_communicator(std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, kTestCollectiveTimeout),
                               *backend, kTestCollectiveTimeout);
    std::vector<float> mine(kCount);
    for (int i = 0; i < kCount; ++i) mine[static_cast<size_t>(i)] = value_of(world_rank(), i);
    std::vector<Buffer> buffers;
    for (const Reduction reduction : {Reduction::sum, Reduction::mean, Reduction::max}) {
        buffers.push_back(backend->allocate(kCount * sizeof(float)));
        backend->copy_to_backend(buffers.back().data(), mine.data(), kCount * sizeof(float));
        nccl->all_reduce(TensorView(buffers.back().data(), DType::f32, {kCount}), reduction);
    }
    nccl->wait();
    std::vector<float> sum(kCount), mean(kCount), maximum(kCount);
    backend->copy_to_host(sum.data(), buffers[0].data(), kCount * sizeof(float));
    backend->copy_to_host(mean.data(), buffers[1].data(), kCount * sizeof(float));
    backend->copy_to_host(maximum.data(), buffers[2].data(), kCount * sizeof(float));
    for (int i = 0; i < kCount; ++i) {
        const auto at = static_cast<size_t>(i);
        EXPECT_EQ(sum[at], 1000.5f) << "element " << i;  // 1000 + i and 0.5 - i
        EXPECT_EQ(mean[at], 500.25f) << "element " << i;
        EXPECT_EQ(maximum[at], 1000.f + static_cast<float>(i)) << "element " << i;
    }
}

}  // namespace
}  // namespace mixgpt
#endif
