#include "dist/cuda/nccl_communicator.h"

#include "core/cuda_check.h"
#include "core/log.h"
#include "core/process_identity.h"
#include "dist/device_communicator.h"
#include "dist/mpi_launch.h"

namespace mixgpt {
namespace {

ncclDataType_t nccl_type(DType dtype) {
    switch (dtype) {
        case DType::f32:
            return ncclFloat;
        case DType::bf16:
            return ncclBfloat16;
        case DType::f16:
            return ncclHalf;
        case DType::i32:
            return ncclInt32;
    }
    throw Error("nccl: unsupported dtype");
}

// NCCL refuses two ranks on one GPU, late and in its own words: refuse them first, on every rank
// alike (each sees every rank's device), naming the ranks and the device.
void refuse_shared_devices(Communicator& host, const std::string& device) {
    const std::vector<std::string> devices = host.all_gather_text(device + " on host " + host_name());
    for (size_t first = 0; first < devices.size(); ++first)
        for (size_t second = first + 1; second < devices.size(); ++second)
            MIXGPT_REQUIRE(
                devices[first] != devices[second],
                format("nccl: ranks %zu and %zu would share %s; NCCL refuses two ranks on one device: "
                       "start at most as many ranks per host as it has CUDA devices (%d visible here)",
                       first, second, devices[first].c_str(), cuda_device_count()));
}

}  // namespace

std::string nccl_version() {
    int code = 0;
    NCCL_CHECK(ncclGetVersion(&code));
    // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
    return format("%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
}

NcclCommunicator::NcclCommunicator(std::unique_ptr<Communicator> host, cudaStream_t compute_stream,
                                   const std::string& device, double timeout_seconds)
    : host_(std::move(host)),
      watchdog_(timeout_seconds, [](const std::string& message) { abort_mpi_job(message); }),
      compute_stream_(compute_stream) {
    MIXGPT_REQUIRE(compute_stream != nullptr, "nccl: the backend's compute stream is needed");
    // Loads NCCL on every rank (kernels/cuda/nccl_library.cpp), so a missing one fails all alike.
    nccl_version();
    refuse_shared_devices(*host_, device);
    ncclUniqueId id{};
    if (host_->rank() == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    host_->broadcast_host(&id, sizeof id, 0);
    {
        auto guard = watchdog_.watch("ncclCommInitRank");
        NCCL_CHECK(ncclCommInitRank(&comm_, host_->world_size(), id, host_->rank()));
    }
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&compute_point_, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&collectives_point_, cudaEventDisableTiming));
}

NcclCommunicator::~NcclCommunicator() {
    if (collectives_point_ != nullptr) cudaEventDestroy(collectives_point_);
    if (compute_point_ != nullptr) cudaEventDestroy(compute_point_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    if (comm_ != nullptr) ncclCommDestroy(comm_);
}

std::string NcclCommunicator::describe() const { return host_->describe() + ", NCCL " + nccl_version(); }

void NcclCommunicator::start(const char* collective) {
    if (pending_collective_.empty()) pending_collective_ = collective;
    CUDA_CHECK(cudaEventRecord(compute_point_, compute_stream_));
    CUDA_CHECK(cudaStreamWaitEvent(stream_, compute_point_, 0));
}

void NcclCommunicator::all_reduce(TensorView values, Reduction reduction) {
    require_f32(values, "all_reduce");
    start("all_reduce");
    const ncclRedOp_t operation = reduction == Reduction::mean  ? ncclAvg
                                  : reduction == Reduction::max ? ncclMax
                                                                : ncclSum;
    NCCL_CHECK(ncclAllReduce(values.data, values.data, static_cast<size_t>(values.numel()), ncclFloat,
                             operation, comm_, stream_));
}

void NcclCommunicator::reduce_scatter_mean(TensorView values) {
    require_f32(values, "reduce_scatter_mean");
    const auto block = static_cast<size_t>(require_blocks(values, world_size(), "reduce_scatter_mean"));
    start("reduce_scatter");
    float* all = values.as<float>();
    NCCL_CHECK(ncclReduceScatter(all, all + static_cast<size_t>(rank()) * block, block, ncclFloat, ncclAvg,
                                 comm_, stream_));
}

void NcclCommunicator::all_gather(TensorView values) {
    const auto block = static_cast<size_t>(require_blocks(values, world_size(), "all_gather"));
    start("all_gather");
    char* all = values.as<char>();
    NCCL_CHECK(ncclAllGather(all + static_cast<size_t>(rank()) * block * dtype_size(values.dtype), all, block,
                             nccl_type(values.dtype), comm_, stream_));
}

void NcclCommunicator::join() {
    CUDA_CHECK(cudaEventRecord(collectives_point_, stream_));
    CUDA_CHECK(cudaStreamWaitEvent(compute_stream_, collectives_point_, 0));
}

void NcclCommunicator::wait() {
    if (pending_collective_.empty()) return;
    {
        auto guard = watchdog_.watch(pending_collective_);
        CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
    ncclResult_t async_error = ncclSuccess;
    NCCL_CHECK(ncclCommGetAsyncError(comm_, &async_error));
    MIXGPT_REQUIRE(async_error == ncclSuccess,
                   "nccl: " + pending_collective_ +
                       " (or a collective after it) failed: " + ncclGetErrorString(async_error));
    pending_collective_.clear();
}

std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator> host,
                                                     const Backend& backend, double timeout_seconds) {
    return std::make_unique<NcclCommunicator>(
        std::move(host), static_cast<cudaStream_t>(backend.cuda_stream()), backend.name(), timeout_seconds);
}

}  // namespace mixgpt
