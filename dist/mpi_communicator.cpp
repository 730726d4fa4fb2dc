#include "dist/mpi_communicator.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <numeric>

#include "core/log.h"
#include "core/mpi_check.h"
#include "core/process_identity.h"
#include "dist/mpi_launch.h"

namespace mixgpt {
namespace {

constexpr size_t kBroadcastChunkBytes = size_t{1} << 30;  // MPI counts are ints

int mpi_count(int64_t count, const char* collective) {
    MIXGPT_REQUIRE(count >= 0 && count <= INT_MAX,
                   format("%s: %lld elements exceed MPI's int counts; use smaller buckets", collective,
                          static_cast<long long>(count)));
    return static_cast<int>(count);
}

std::vector<int> mpi_counts(const std::vector<int64_t>& counts, const char* collective) {
    std::vector<int> result;
    for (int64_t count : counts) result.push_back(mpi_count(count, collective));
    mpi_count(std::accumulate(counts.begin(), counts.end(), int64_t{0}), collective);
    return result;
}

std::vector<int> displacements(const std::vector<int>& counts) {
    std::vector<int> result(counts.size(), 0);
    std::partial_sum(counts.begin(), counts.end() - 1, result.begin() + 1);
    return result;
}

MPI_Datatype element_type(DType dtype) {
    switch (dtype) {
        case DType::f32:
            return MPI_FLOAT;
        case DType::bf16:
        case DType::f16:
            return MPI_UINT16_T;  // 16-bit values move as bits
        case DType::i32:
            return MPI_INT32_T;
    }
    throw Error(std::string("mpi: unknown dtype ") + dtype_name(dtype));
}

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm, double timeout_seconds)
    : watchdog_(timeout_seconds, [](const std::string& message) { abort_mpi_job(message); }) {
    auto guard = watchdog_.watch("communicator setup");
    MPI_CHECK(MPI_Comm_dup(comm, &comm_));
    MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    MPI_CHECK(MPI_Comm_size(comm_, &world_size_));
    MPI_Comm node = MPI_COMM_NULL;
    MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
    MPI_CHECK(MPI_Comm_rank(node, &local_rank_));
    MPI_CHECK(MPI_Comm_free(&node));
}

MpiCommunicator::~MpiCommunicator() {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

std::string MpiCommunicator::describe() const { return "host " + host_name(); }

void MpiCommunicator::start(const char* collective, MPI_Request request) {
    if (requests_.empty()) pending_collective_ = collective;
    requests_.push_back(request);
}

void MpiCommunicator::all_reduce(TensorView values, Reduction reduction) {
    require_f32(values, "all_reduce");
    MPI_Request request;
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, values.data, mpi_count(values.numel(), "all_reduce"), MPI_FLOAT,
                             reduction == Reduction::max ? MPI_MAX : MPI_SUM, comm_, &request));
    start("all_reduce", request);
    if (reduction == Reduction::mean)
        finishes_.push_back({values.as<float>(), values.as<float>(), values.numel(), true});
}

void MpiCommunicator::reduce_scatter_mean(TensorView values) {
    require_f32(values, "reduce_scatter_mean");
    const int64_t block = require_blocks(values, world_size_, "reduce_scatter_mean");
    MPI_Request request;
    MPI_CHECK(MPI_Ireduce_scatter_block(MPI_IN_PLACE, values.data, mpi_count(block, "reduce_scatter_mean"),
                                        MPI_FLOAT, MPI_SUM, comm_, &request));
    start("reduce_scatter", request);
    finishes_.push_back({values.as<float>() + rank_ * block, values.as<float>(), block, true});
}

void MpiCommunicator::all_gather(TensorView values) {
    const int64_t block = require_blocks(values, world_size_, "all_gather");
    MPI_Request request;
    MPI_CHECK(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, values.data, mpi_count(block, "all_gather"),
                             element_type(values.dtype), comm_, &request));
    start("all_gather", request);
}

void MpiCommunicator::wait() {
    if (!requests_.empty()) {
        auto guard = watchdog_.watch(pending_collective_);
        MPI_CHECK(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
    }
    const auto ranks = static_cast<float>(world_size_);
    for (const Finish& finish : finishes_) {
        if (finish.destination != finish.source)
            std::memmove(finish.destination, finish.source,
                         static_cast<size_t>(finish.count) * sizeof(float));
        if (finish.average)
            for (int64_t i = 0; i < finish.count; ++i) finish.destination[i] /= ranks;
    }
    requests_.clear();
    finishes_.clear();
}

void MpiCommunicator::broadcast_host(void* data, size_t bytes, int root) {
    require_root(root, world_size_, "broadcast");
    auto guard = watchdog_.watch("broadcast");
    for (size_t done = 0; done < bytes; done += kBroadcastChunkBytes) {
        const size_t chunk = std::min(kBroadcastChunkBytes, bytes - done);
        MPI_CHECK(MPI_Bcast(static_cast<char*>(data) + done, static_cast<int>(chunk), MPI_BYTE, root, comm_));
    }
}

void MpiCommunicator::all_reduce_sum_host(double* values, int count) {
    auto guard = watchdog_.watch("all_reduce (host)");
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, comm_));
}

void MpiCommunicator::gather_host(const float* part, float* whole, const std::vector<int64_t>& counts,
                                  int root) {
    require_root(root, world_size_, "gather");
    MIXGPT_REQUIRE(counts.size() == static_cast<size_t>(world_size_),
                   "gather: one segment count per rank needed");
    const std::vector<int> receive_counts = mpi_counts(counts, "gather");
    const std::vector<int> offsets = displacements(receive_counts);
    auto guard = watchdog_.watch("gather");
    MPI_CHECK(MPI_Gatherv(part, receive_counts[static_cast<size_t>(rank_)], MPI_FLOAT, whole,
                          receive_counts.data(), offsets.data(), MPI_FLOAT, root, comm_));
}

std::vector<std::string> MpiCommunicator::all_gather_text(const std::string& text) {
    auto guard = watchdog_.watch("all_gather (host)");
    const int length = mpi_count(static_cast<int64_t>(text.size()), "all_gather");
    std::vector<int> lengths(static_cast<size_t>(world_size_));
    MPI_CHECK(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm_));
    const std::vector<int> offsets = displacements(lengths);
    std::string joined(static_cast<size_t>(offsets.back() + lengths.back()), '\0');
    MPI_CHECK(MPI_Allgatherv(text.data(), length, MPI_CHAR, joined.data(), lengths.data(), offsets.data(),
                             MPI_CHAR, comm_));
    std::vector<std::string> texts;
    for (int r = 0; r < world_size_; ++r)
        texts.push_back(joined.substr(static_cast<size_t>(offsets[static_cast<size_t>(r)]),
                                      static_cast<size_t>(lengths[static_cast<size_t>(r)])));
    return texts;
}

void MpiCommunicator::barrier() {
    auto guard = watchdog_.watch("barrier");
    MPI_CHECK(MPI_Barrier(comm_));
}

}  // namespace mixgpt
