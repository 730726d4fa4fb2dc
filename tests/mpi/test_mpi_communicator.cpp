// The MPI communicator on 2 ranks: each collective against values computed independently here
// (small integers and halves, so sums and means are exact), on equal blocks per rank, and
// several collectives in flight before one wait().
#include <gtest/gtest.h>

#include <numeric>

#include "core/dtype.h"
#include "core/process_identity.h"
#include "dist/mpi_communicator.h"
#include "tests/mpi/mpi_test_support.h"

namespace mixgpt {
namespace {

using namespace testing_support;

std::vector<float> rank_values(int rank, int count) {
    std::vector<float> values(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i)
        values[static_cast<size_t>(i)] = static_cast<float>(100 * rank + i) + 0.5f;
    return values;
}

TEST(MpiCommunicatorTest, KnowsItsRanks) {
    MpiCommunicator communicator(MPI_COMM_WORLD, kTestCollectiveTimeout);
    ASSERT_EQ(communicator.world_size(), 2);
    EXPECT_EQ(communicator.rank(), world_rank());
    EXPECT_EQ(communicator.local_rank(), world_rank());  // both ranks run on this machine
    EXPECT_EQ(communicator.describe(), "host " + host_name());
}

TEST(MpiCommunicatorTest, BucketsInFlightTogether) {
    MpiCommunicator communicator(MPI_COMM_WORLD, kTestCollectiveTimeout);
    const int rank = communicator.rank();
    std::vector<float> sum = rank_values(rank, 37), mean = rank_values(rank, 1000);
    // Blocks of 5 and of 1 per rank.
    std::vector<float> scatter_a = rank_values(rank, 10), scatter_b = rank_values(rank, 2);
    communicator.all_reduce(TensorView(sum.data(), DType::f32, {37}), Reduction::sum);
    communicator.reduce_scatter_mean(TensorView(scatter_a.data(), DType::f32, {10}));
    communicator.all_reduce(TensorView(mean.data(), DType::f32, {1000}), Reduction::mean);
    communicator.reduce_scatter_mean(TensorView(scatter_b.data(), DType::f32, {2}));
    communicator.wait();

    for (int i = 0; i < 37; ++i) EXPECT_EQ(sum[static_cast<size_t>(i)], static_cast<float>(2 * i + 100 + 1));
    for (int i = 0; i < 1000; ++i) EXPECT_EQ(mean[static_cast<size_t>(i)], static_cast<float>(i + 50) + 0.5f);
    // The mean of element i over ranks is i + 50.5; only this rank's block is defined.
    for (int i = 5 * rank; i < 5 * rank + 5; ++i)
        EXPECT_EQ(scatter_a[static_cast<size_t>(i)], static_cast<float>(i + 50) + 0.5f) << "element " << i;
    EXPECT_EQ(scatter_b[static_cast<size_t>(rank)], static_cast<float>(rank + 50) + 0.5f);
}

// The maximum over ranks comes from rank 0 at even elements and from rank 1 at odd ones.
TEST(MpiCommunicatorTest, AllReducesTheMaximum) {
    MpiCommunicator communicator(MPI_COMM_WORLD, kTestCollectiveTimeout);
    std::vector<float> values(50);
    for (int i = 0; i < 50; ++i)
        values[static_cast<size_t>(i)] =
            (i + communicator.rank()) % 2 == 0 ? 1000.f + i : -static_cast<float>(i);
    communicator.all_reduce(TensorView(values.data(), DType::f32, {50}), Reduction::max);
    communicator.wait();
    for (int i = 0; i < 50; ++i) EXPECT_EQ(values[static_cast<size_t>(i)], 1000.f + i) << "element " << i;
}

TEST(MpiCommunicatorTest, AllGathersSixteenBitBlocks) {
    MpiCommunicator communicator(MPI_COMM_WORLD, kTestCollectiveTimeout);
    const int rank = communicator.rank();
    std::vector<uint16_t> bits(8, 0xffff);  // the other rank's block starts as garbage
    for (int i = 0; i < 4; ++i)
        bits[static_cast<size_t>(4 * rank + i)] = static_cast<uint16_t>(1000 * (rank + 1) + i);
    communicator.all_gather(TensorView(bits.data(), DType::bf16, {8}));
    communicator.wait();
    const std::vector<uint16_t> expected{1000, 1001, 1002, 1003, 2000, 2001, 2002, 2003};
    EXPECT_EQ(bits, expected);
}

TEST(MpiCommunicatorTest, HostCollectives) {
    MpiCommunicator communicator(MPI_COMM_WORLD, kTestCollectiveTimeout);
    const int rank = communicator.rank();

    std::vector<int64_t> broadcast(5, rank == 1 ? 77 : 0);
    communicator.broadcast_host(broadcast.data(), broadcast.size() * sizeof(int64_t), 1);
    EXPECT_EQ(broadcast, std::vector<int64_t>(5, 77));

    double sums[2] = {1.5 + rank, 10.0 * rank};
    communicator.all_reduce_sum_host(sums, 2);
    EXPECT_EQ(sums[0], 4.0);
    EXPECT_EQ(sums[1], 10.0);

    const std::vector<int64_t> counts{2, 4};
    const std::vector<float> part = rank_values(rank, static_cast<int>(counts[static_cast<size_t>(rank)]));
    std::vector<float> whole(rank == 0 ? 6 : 0);
    communicator.gather_host(part.data(), whole.data(), counts, 0);
    if (rank == 0) {
        EXPECT_EQ(whole, (std::vector<float>{0.5f, 1.5f, 100.5f, 101.5f, 102.5f, 103.5f}));
    }

    const std::vector<std::string> texts = communicator.all_gather_text(rank == 0 ? "" : "rank one");
    EXPECT_EQ(texts, (std::vector<std::string>{"", "rank one"}));
    communicator.barrier();
}

TEST(MpiCommunicatorTest, RefusesViewsThatDoNotSplitIntoEqualBlocks) {
    MpiCommunicator communicator(MPI_COMM_WORLD, kTestCollectiveTimeout);
    std::vector<float> values(7);
    try {
        communicator.reduce_scatter_mean(TensorView(values.data(), DType::f32, {7}));
        FAIL() << "no error";
    } catch (const Error& error) {
        EXPECT_STREQ(error.what(),
                     "reduce_scatter_mean: 7 elements do not split into 2 equal blocks (pad them)");
    }
    EXPECT_THROW(communicator.all_gather(TensorView(values.data(), DType::f32, {7})), Error);
}

}  // namespace
}  // namespace mixgpt
