// What NCCL refuses, refused clearly: two ranks on one device are refused on every rank, naming
// both and the device (on any host with a device, the simulator included). And what real NCCL
// hangs on fails on the simulator: ranks passing different unique ids (a broken id broadcast),
// and ranks disagreeing on a collective's count or type (an all-reduce, a reduce-scatter's
// pieces, an all-gather's dtype), which the communicator's wait() then reports.
// The suite's name holds "cuda" for `make test`'s 2-rank simulator run (scripts/run_tests.sh).
#ifdef MIXGPT_WITH_NCCL
#include <gtest/gtest.h>
#include <nccl.h>

#include "core/log.h"
#include "core/process_identity.h"
#include "kernels/device_discovery.h"
#include "tests/mpi/mpi_test_support.h"
#include "dist/device_communicator.h"
#include "dist/mpi_communicator.h"

namespace mixgpt {
namespace {

using namespace testing_support;

bool on_simulator() {
    const CudaDiscovery found = discover_cuda();
    return !found.devices.empty() && found.devices[0].name.rfind("mixgpt CUDA simulator", 0) == 0;
}

std::unique_ptr<Communicator> mpi_world() {
    return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, kTestCollectiveTimeout);
}

TEST(cudaNcclChecks, TwoRanksOnOneDeviceAreRefusedOnEveryRank) {
    if (cuda_device_count() == 0) GTEST_SKIP() << "needs a CUDA device";
    const std::unique_ptr<Backend> backend = make_backend({"cuda", 0, Precision::fp32, 0});
    const std::string message =
        test::error_of([&] { make_nccl_communicator(mpi_world(), *backend, kTestCollectiveTimeout); });
    EXPECT_EQ(message, format("nccl: ranks 0 and 1 would share %s on host %s; NCCL refuses two ranks on one "
                              "device: start at most as many ranks per host as it has CUDA devices (%d "
                              "visible here)",
                              backend->name().c_str(), host_name().c_str(), cuda_device_count()));
}

TEST(cudaNcclChecks, SimulatedNcclRefusesRanksWithDifferentUniqueIds) {
    if (!on_simulator()) GTEST_SKIP() << "real NCCL waits for ranks that never join";
    ncclUniqueId id{};
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    ncclUniqueId broken = id;
    broken.internal[0] =
        static_cast<char>(broken.internal[0] + world_rank());  // as a bad broadcast leaves it
    ncclComm_t comm = nullptr;
    EXPECT_EQ(ncclCommInitRank(&comm, kRanks, broken, world_rank()), ncclInvalidUsage);
    EXPECT_EQ(comm, nullptr);
    ASSERT_EQ(ncclCommInitRank(&comm, kRanks, id, world_rank()), ncclSuccess);
    EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(cudaNcclChecks, SimulatedNcclFailsRanksDisagreeingOnACount) {
    if (!on_simulator() || cuda_device_count() < kRanks) GTEST_SKIP() << "real NCCL hangs";
    const std::unique_ptr<Backend> backend = make_backend({"cuda", world_rank(), Precision::fp32, 0});
    const std::unique_ptr<Communicator> nccl =
        make_nccl_communicator(mpi_world(), *backend, kTestCollectiveTimeout);
    const int64_t count = world_rank() == 0 ? 64 : 48;
    Buffer values = backend->allocate(static_cast<size_t>(count) * sizeof(float));
    nccl->all_reduce(TensorView(values.data(), DType::f32, {count}), Reduction::sum);
    EXPECT_EQ(test::error_of([&] { nccl->wait(); }),
              "nccl: all_reduce (or a collective after it) failed: error (cuda_sim NCCL; described above)");
}

TEST(cudaNcclChecks, SimulatedNcclFailsRanksDisagreeingOnAReduceScatterPiece) {
    if (!on_simulator() || cuda_device_count() < kRanks) GTEST_SKIP() << "real NCCL hangs";
    const std::unique_ptr<Backend> backend = make_backend({"cuda", world_rank(), Precision::fp32, 0});
    const std::unique_ptr<Communicator> nccl =
        make_nccl_communicator(mpi_world(), *backend, kTestCollectiveTimeout);
    const int64_t count = world_rank() == 0 ? 64 : 48;  // pieces of 32 and 24
    Buffer values = backend->allocate(static_cast<size_t>(count) * sizeof(float));
    nccl->reduce_scatter_mean(TensorView(values.data(), DType::f32, {count}));
    EXPECT_EQ(
        test::error_of([&] { nccl->wait(); }),
        "nccl: reduce_scatter (or a collective after it) failed: error (cuda_sim NCCL; described above)");
}

TEST(cudaNcclChecks, SimulatedNcclFailsRanksDisagreeingOnAnAllGatherType) {
    if (!on_simulator() || cuda_device_count() < kRanks) GTEST_SKIP() << "real NCCL hangs";
    const std::unique_ptr<Backend> backend = make_backend({"cuda", world_rank(), Precision::fp32, 0});
    const std::unique_ptr<Communicator> nccl =
        make_nccl_communicator(mpi_world(), *backend, kTestCollectiveTimeout);
    Buffer values = backend->allocate(64 * sizeof(uint16_t));
    nccl->all_gather(TensorView(values.data(), world_rank() == 0 ? DType::bf16 : DType::f16, {64}));
    EXPECT_EQ(test::error_of([&] { nccl->wait(); }),
              "nccl: all_gather (or a collective after it) failed: error (cuda_sim NCCL; described above)");
}

}  // namespace
}  // namespace mixgpt
#endif  // MIXGPT_WITH_NCCL
