// CudaBackend: device selection, the compute stream, memory and transfers, and
// the factory functions of kernels/backend_factory.h. The ops live in one .cu
// file per family (embedding.cu, layernorm.cu, matmul.cu, ...).
#include <cstring>

#include "core/cuda_check.h"
#include "core/log.h"
#include "kernels/backend_factory.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/fp8_support.h"
#include "kernels/device_discovery.h"

namespace mixgpt {
namespace cuda {
namespace {

// Never launched: asking for its attributes tells whether this build has code for the device.
__global__ void architecture_probe_kernel() { declare_launch_limits<0>(); }

}  // namespace

CudaBackend::CudaBackend(const BackendOptions& options)
    : precision_(options.precision),
      flash_attention_(options.flash_attention),
      attention_products_bytes_(options.attention_products_bytes) {
    const int device = options.device_index;
    const CudaDiscovery discovery = discover_cuda();
    MIXGPT_REQUIRE(!discovery.devices.empty(), "device cuda: " + discovery.failure);
    const int count = static_cast<int>(discovery.devices.size());
    MIXGPT_REQUIRE(device >= 0 && device < count,
                   format("device cuda: device index %d is out of range (%d visible)", device, count));
    const std::string refusal = select_cuda_device(device);
    MIXGPT_REQUIRE(refusal.empty(), "device cuda: " + refusal);
    cudaDeviceProp properties{};
    CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
    cudaFuncAttributes probe{};
    if (cudaFuncGetAttributes(&probe, architecture_probe_kernel) != cudaSuccess) {
        cudaGetLastError();
        throw Error(format(
            "device cuda:%d (%s, compute capability %d.%d): this mixgpt has no kernels for it; "
            "rebuild with GPU_ARCHS=%d%d",
            device, properties.name, properties.major, properties.minor, properties.major, properties.minor));
    }
    if (precision_ == Precision::fp8) require_fp8_device(device);
    name_ = format("cuda:%d (%s)", device, properties.name);
    multiprocessors_ = properties.multiProcessorCount;
    shared_memory_optin_ = properties.sharedMemPerBlockOptin;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&bounce_free_, cudaEventDisableTiming));
    allocator_ = std::make_unique<DeviceAllocator>(stream_);
    matmuls_ = std::make_unique<LtMatmulRunner>(*allocator_, stream_);
    scratch_ = std::make_unique<ScratchSpace>(*allocator_, stream_);
}

CudaBackend::~CudaBackend() {
    if (cudaStreamSynchronize(stream_) != cudaSuccess)
        log_warning("cuda backend: the stream reported an error while shutting down");
    matmuls_.reset();
    scratch_.reset();
    rope_device_ = Buffer();
    bounce_ = Buffer();
    cudaEventDestroy(bounce_free_);
    cudaStreamDestroy(stream_);
}

Buffer CudaBackend::allocate(size_t bytes) { return allocator_->allocate(bytes); }

Buffer CudaBackend::allocate_host_staging(size_t bytes) { return allocate_pinned(bytes); }

void CudaBackend::copy_to_backend(void* destination, const void* host_source, size_t bytes) {
    if (bytes == 0) return;
    if (bytes > kBounceBytes) {
        CUDA_CHECK(cudaMemcpyAsync(destination, host_source, bytes, cudaMemcpyHostToDevice, stream_));
        CUDA_CHECK(cudaStreamSynchronize(stream_));
        return;
    }
    // The source may be reused as soon as this returns: it is copied into the bounce
    // buffer, whose previous upload must have left it first.
    if (bounce_.empty()) bounce_ = allocate_pinned(kBounceBytes);
    CUDA_CHECK(cudaEventSynchronize(bounce_free_));
    std::memcpy(bounce_.data(), host_source, bytes);
    CUDA_CHECK(cudaMemcpyAsync(destination, bounce_.data(), bytes, cudaMemcpyHostToDevice, stream_));
    CUDA_CHECK(cudaEventRecord(bounce_free_, stream_));
}

void CudaBackend::copy_to_host(void* host_destination, const void* source, size_t bytes) {
    if (bytes == 0) return;
    CUDA_CHECK(cudaMemcpyAsync(host_destination, source, bytes, cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::copy_within(void* destination, const void* source, size_t bytes) {
    if (bytes == 0) return;
    CUDA_CHECK(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::fill_zero(void* destination, size_t bytes) {
    if (bytes == 0) return;
    CUDA_CHECK(cudaMemsetAsync(destination, 0, bytes, stream_));
}

void CudaBackend::synchronize() { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

size_t CudaBackend::peak_memory_bytes() const { return allocator_->peak_bytes(); }

AvailableMemory CudaBackend::available_memory() const {
    size_t free_bytes = 0, total_bytes = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    return {free_bytes, "free device memory (cudaMemGetInfo)"};
}

}  // namespace cuda

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options) {
    return std::make_unique<cuda::CudaBackend>(options);
}

int cuda_device_count_impl() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        cudaGetLastError();  // no driver or no device: not an error for a count
        return 0;
    }
    return count;
}

}  // namespace mixgpt
