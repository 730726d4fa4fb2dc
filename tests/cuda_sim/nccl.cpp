// The part of NCCL that train/cuda/nccl_communicator.cpp calls, for the simulator. Device
// memory is host memory here, so a collective is MPI's collective, run when its stream gets
// there (runtime.h), on a duplicate of MPI_COMM_WORLD made by ncclCommInitRank so that it never
// pairs with the host's own MPI calls (a communicator of one rank needs no MPI: every
// collective is a copy). Every rank runs its streams' work at the same places in the same
// program, so the collectives meet in the same order everywhere, grouped calls included.
// Reductions are on fp32 only, as mixgpt's are; all-gathers move bytes. Every buffer must lie
// inside one device allocation, as NCCL's must be device memory. Each collective that runs is
// appended to the call log (nccl_log.h).
//
// What real NCCL checks, or hangs on, fails here with a message: ncclCommInitRank compares the
// unique ids of all ranks (a broken id broadcast), and each collective, when it runs, compares
// its call, count, type and operation across ranks before moving data (so the per-rank
// counts of ncclReduceScatter and ncclAllGather must be equal everywhere, as NCCL requires). A mismatch skips
// the data on every rank and leaves the communicator with an asynchronous error, which
// ncclCommGetAsyncError reports, as NCCL's does. (Two ranks on one device: the simulated runtime
// does not tell this file which device is current; train/cuda/nccl_communicator.cpp refuses them.)
#include <mpi.h>
#include <nccl.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "kernels/cuda_libraries.h"
#include "tests/cuda_sim/nccl_log.h"
#include "tests/cuda_sim/runtime.h"

struct ncclComm {
    int rank;
    int ranks;
    MPI_Comm mpi;                            // MPI_COMM_NULL for one rank
    ncclResult_t async_error = ncclSuccess;  // a mismatch found when a collective ran
};

namespace {

std::mutex call_log_mutex;
std::vector<mixgpt::cuda_sim::NcclCall> call_log;

void log_call(const char* name, size_t count, ncclDataType_t type) {
    const std::lock_guard<std::mutex> lock(call_log_mutex);
    call_log.push_back({name, count, type});
}

size_t size_of(ncclDataType_t type) {
    switch (type) {
        case ncclInt8:
        case ncclUint8:
            return 1;
        case ncclFloat16:
        case ncclBfloat16:
            return 2;
        case ncclInt32:
        case ncclUint32:
        case ncclFloat32:
            return 4;
        case ncclInt64:
        case ncclUint64:
        case ncclFloat64:
            return 8;
        default:
            return 0;
    }
}

ncclResult_t refuse(const char* call, const char* why, ncclResult_t result = ncclInvalidArgument) {
    std::fprintf(stderr, "cuda_sim: %s: %s\n", call, why);
    return result;
}

// The checks every collective makes; `send` may be null where the caller's role reads nothing.
ncclResult_t check(const char* call, const void* send, const void* receive, size_t count, ncclDataType_t type,
                   ncclComm_t comm) {
    if (comm == nullptr) return refuse(call, "no communicator");
    const size_t bytes = count * size_of(type);
    if (size_of(type) == 0) return refuse(call, "data type not simulated");
    if (bytes > static_cast<size_t>(INT_MAX)) return refuse(call, "more than INT_MAX bytes: not simulated");
    if ((send != nullptr && !mixgpt::cuda_sim::in_device_memory(send, bytes)) ||
        (receive != nullptr && !mixgpt::cuda_sim::in_device_memory(receive, bytes)))
        return refuse(call, "a buffer is not inside one device allocation");
    return ncclSuccess;
}

// values (count) fp32 scaled to the mean for ncclAvg, after the sum over ranks.
void average(float* values, size_t count, ncclRedOp_t op, ncclComm_t comm) {
    if (op == ncclAvg)
        for (size_t i = 0; i < count; ++i) values[i] /= static_cast<float>(comm->ranks);
}

// What each rank passed to one collective; every rank must pass the same.
struct CollectiveCall {
    char name[24];
    uint64_t count;
    int type, op;
};

// Whether every rank made the same call (compared when the collective runs, in stream order, so
// the comparison pairs the same collectives everywhere). On a mismatch every rank reports it,
// marks the communicator broken and moves no data; on a broken communicator nothing runs.
bool same_call_everywhere(ncclComm_t comm, const char* name, size_t count, ncclDataType_t type, int op) {
    if (comm->async_error != ncclSuccess) return false;
    if (comm->ranks == 1) return true;
    CollectiveCall mine{};
    std::snprintf(mine.name, sizeof mine.name, "%s", name);
    mine.count = count;
    mine.type = static_cast<int>(type);
    mine.op = op;
    std::vector<CollectiveCall> calls(static_cast<size_t>(comm->ranks));
    MPI_Allgather(&mine, sizeof mine, MPI_BYTE, calls.data(), sizeof mine, MPI_BYTE, comm->mpi);
    for (int r = 1; r < comm->ranks; ++r) {
        const CollectiveCall& first = calls[0];
        const CollectiveCall& other = calls[static_cast<size_t>(r)];
        if (std::strcmp(first.name, other.name) == 0 && first.count == other.count &&
            first.type == other.type && first.op == other.op)
            continue;
        if (comm->rank == 0)
            std::fprintf(
                stderr,
                "cuda_sim: NCCL ranks disagree on a collective: rank 0 called %s(count %llu, type %d, "
                "op %d), rank %d %s(count %llu, type %d, op %d); NCCL would hang or "
                "corrupt data\n",
                first.name, static_cast<unsigned long long>(first.count), first.type, first.op, r, other.name,
                static_cast<unsigned long long>(other.count), other.type, other.op);
        comm->async_error = ncclInvalidUsage;
        return false;
    }
    return true;
}

}  // namespace

namespace mixgpt {

std::string nccl_library_status() {
    return "the CUDA simulator's stand-in (tests/cuda_sim/nccl.cpp, over MPI)";
}

}  // namespace mixgpt

extern "C" {

const char* ncclGetErrorString(ncclResult_t result) {
    return result == ncclSuccess ? "no error (cuda_sim NCCL)" : "error (cuda_sim NCCL; described above)";
}

ncclResult_t ncclGetVersion(int* version) {
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
    std::memset(id, 0, sizeof *id);
    std::snprintf(id->internal, sizeof id->internal, "mixgpt cuda_sim NCCL over MPI_COMM_WORLD");
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int ranks, ncclUniqueId id, int rank) {
    const char* call = "ncclCommInitRank";
    if (ranks < 1 || rank < 0 || rank >= ranks) return refuse(call, "rank out of range");
    if (ranks > 1) {
        int initialized = 0, world_size = 0, world_rank = 0;
        MPI_Initialized(&initialized);
        if (!initialized) return refuse(call, "several ranks need MPI", ncclInvalidUsage);
        MPI_Comm_size(MPI_COMM_WORLD, &world_size);
        MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
        if (world_size != ranks || world_rank != rank)
            return refuse(call, "the simulator's communicators are MPI_COMM_WORLD", ncclInvalidUsage);
    }
    *comm = new ncclComm{rank, ranks, MPI_COMM_NULL};
    if (ranks == 1) return ncclSuccess;
    MPI_Comm_dup(MPI_COMM_WORLD, &(*comm)->mpi);
    std::vector<ncclUniqueId> ids(static_cast<size_t>(ranks));
    MPI_Allgather(&id, sizeof id, MPI_BYTE, ids.data(), sizeof id, MPI_BYTE, (*comm)->mpi);
    for (int r = 1; r < ranks; ++r)
        if (std::memcmp(&ids[0], &ids[static_cast<size_t>(r)], sizeof id) != 0) {
            if (rank == 0)
                std::fprintf(
                    stderr,
                    "cuda_sim: ncclCommInitRank: rank %d passed another unique id than rank 0 (the id "
                    "is broadcast wrongly); NCCL would wait for ranks that never join\n",
                    r);
            ncclCommDestroy(*comm);
            *comm = nullptr;
            return ncclInvalidUsage;
        }
    return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
    if (comm == nullptr) return refuse("ncclCommGetAsyncError", "no communicator");
    *async_error = comm->async_error;
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    if (comm->mpi != MPI_COMM_NULL) MPI_Comm_free(&comm->mpi);
    delete comm;
    return ncclSuccess;
}

ncclResult_t ncclGroupStart() { return ncclSuccess; }
ncclResult_t ncclGroupEnd() { return ncclSuccess; }

ncclResult_t ncclAllReduce(const void* send, void* receive, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
    const char* call = "ncclAllReduce";
    if (const ncclResult_t r = check(call, send, receive, count, type, comm); r != ncclSuccess) return r;
    if (type != ncclFloat32) return refuse(call, "only fp32 reductions are simulated");
    if (op != ncclSum && op != ncclAvg && op != ncclMax)
        return refuse(call, "only ncclSum, ncclAvg and ncclMax are simulated");
    mixgpt::cuda_sim::enqueue_compute(stream, [=] {
        log_call(call, count, type);
        if (!same_call_everywhere(comm, call, count, type, op)) return;
        if (send != receive) std::memmove(receive, send, count * sizeof(float));
        auto* values = static_cast<float*>(receive);
        if (comm->ranks > 1)
            MPI_Allreduce(MPI_IN_PLACE, values, static_cast<int>(count), MPI_FLOAT,
                          op == ncclMax ? MPI_MAX : MPI_SUM, comm->mpi);
        average(values, count, op, comm);
    });
    return ncclSuccess;
}

// send (ranks * count), receive (count): receive may be send's block of this rank (in place).
ncclResult_t ncclReduceScatter(const void* send, void* receive, size_t count, ncclDataType_t type,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
    const char* call = "ncclReduceScatter";
    if (comm == nullptr) return refuse(call, "no communicator");
    const size_t ranks = static_cast<size_t>(comm->ranks);
    if (const ncclResult_t r = check(call, send, nullptr, ranks * count, type, comm); r != ncclSuccess)
        return r;
    if (const ncclResult_t r = check(call, nullptr, receive, count, type, comm); r != ncclSuccess) return r;
    if (type != ncclFloat32) return refuse(call, "only fp32 reductions are simulated");
    if (op != ncclSum && op != ncclAvg) return refuse(call, "only ncclSum and ncclAvg are simulated");
    mixgpt::cuda_sim::enqueue_compute(stream, [=] {
        log_call(call, count, type);
        if (!same_call_everywhere(comm, call, count, type, op)) return;
        const auto* first = static_cast<const float*>(send);
        const std::vector<float> contributed(first, first + ranks * count);  // receive may alias it
        auto* values = static_cast<float*>(receive);
        if (comm->ranks > 1)
            MPI_Reduce_scatter_block(contributed.data(), values, static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                                     comm->mpi);
        else
            std::memcpy(values, contributed.data(), count * sizeof(float));
        average(values, count, op, comm);
    });
    return ncclSuccess;
}

// send (count), receive (ranks * count): send may be receive's block of this rank (in place).
ncclResult_t ncclAllGather(const void* send, void* receive, size_t count, ncclDataType_t type,
                           ncclComm_t comm, cudaStream_t stream) {
    const char* call = "ncclAllGather";
    if (comm == nullptr) return refuse(call, "no communicator");
    const size_t ranks = static_cast<size_t>(comm->ranks);
    if (const ncclResult_t r = check(call, send, nullptr, count, type, comm); r != ncclSuccess) return r;
    if (const ncclResult_t r = check(call, nullptr, receive, ranks * count, type, comm); r != ncclSuccess)
        return r;
    const size_t bytes = count * size_of(type);
    mixgpt::cuda_sim::enqueue_compute(stream, [=] {
        log_call(call, count, type);
        if (!same_call_everywhere(comm, call, count, type, -1)) return;
        char* own_block = static_cast<char*>(receive) + static_cast<size_t>(comm->rank) * bytes;
        if (send != own_block) std::memmove(own_block, send, bytes);
        if (comm->ranks > 1)
            MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, receive, static_cast<int>(bytes), MPI_BYTE,
                          comm->mpi);
    });
    return ncclSuccess;
}

}  // extern "C"

namespace mixgpt::cuda_sim {

std::vector<NcclCall> nccl_calls() {
    const std::lock_guard<std::mutex> lock(call_log_mutex);
    return call_log;
}

void clear_nccl_calls() {
    const std::lock_guard<std::mutex> lock(call_log_mutex);
    call_log.clear();
}

}  // namespace mixgpt::cuda_sim
