#include "kernels/cpu/cpu_backend.h"

#include <omp.h>

#include <cstring>

#include "core/log.h"
#include "core/thread_limit.h"
#include "kernels/backend_factory.h"
#include "kernels/cpu/openblas_library.h"

namespace mixgpt {
namespace cpu {

CpuBackend::CpuBackend(const BackendOptions& options) : precision_(options.precision) {
    const std::string problem = threads_problem(options.threads);
    MIXGPT_REQUIRE(problem.empty(), "threads: " + problem);
    if (options.threads > 0) omp_set_num_threads(options.threads);
    load_openblas(omp_get_max_threads());
}

std::string CpuBackend::name() const { return format("cpu (%d threads)", omp_get_max_threads()); }

Buffer CpuBackend::allocate(size_t bytes) { return memory_.allocate(bytes); }

Buffer CpuBackend::allocate_host_staging(size_t bytes) { return Buffer::host(bytes); }

void CpuBackend::copy_to_backend(void* destination, const void* host_source, size_t bytes) {
    std::memcpy(destination, host_source, bytes);
}

void CpuBackend::copy_to_host(void* host_destination, const void* source, size_t bytes) {
    std::memcpy(host_destination, source, bytes);
}

void CpuBackend::copy_within(void* destination, const void* source, size_t bytes) {
    std::memmove(destination, source, bytes);
}

void CpuBackend::fill_zero(void* destination, size_t bytes) { std::memset(destination, 0, bytes); }

size_t CpuBackend::peak_memory_bytes() const { return memory_.peak_bytes(); }

// attention_backward: P and dP, (T, T) floats each, on every OpenMP thread (the forward needs one).
size_t CpuBackend::attention_scratch_bytes(int64_t seq_len, int64_t) const {
    return static_cast<size_t>(omp_get_max_threads()) * 2 * sizeof(float) * static_cast<size_t>(seq_len) *
           static_cast<size_t>(seq_len);
}

}  // namespace cpu

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options) {
    return std::make_unique<cpu::CpuBackend>(options);
}

}  // namespace mixgpt
