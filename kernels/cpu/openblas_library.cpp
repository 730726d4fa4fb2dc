#include "kernels/cpu/openblas_library.h"

#include <cblas.h>
#include <dlfcn.h>
#include <omp.h>

#include <atomic>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "core/available_memory.h"
#include "core/error.h"
#include "core/log.h"

namespace mixgpt::cpu {
namespace {

using Sgemm = decltype(cblas_sgemm);

constexpr const char* kLibraryName = "libopenblas.so.0";
// One buffer as OpenBLAS maps it: BUFFER_SIZE (32 << 22 on x86-64, common_x86_64.h) plus its
// page alignment, or glibc's rounding when it falls back to malloc.
constexpr size_t kBufferBytes = (size_t{128} << 20) + (size_t{1} << 20);
// The library's own mappings (37 MB for 0.3.21, libgfortran included), with room to spare.
constexpr size_t kLibraryBytes = size_t{64} << 20;
// An OpenMP thread's stack (glibc's default under the usual 8 MiB RLIMIT_STACK).
constexpr size_t kThreadStackBytes = size_t{8} << 20;

std::mutex g_load_mutex;
std::atomic<Sgemm*> g_sgemm{nullptr};

double mebibytes(size_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

// Whether an address-space limit is set, after checking that it leaves room for everything
// OpenBLAS will reserve for `threads` threads.
bool require_room(int threads) {
    const size_t headroom = address_space_headroom();
    if (headroom == std::numeric_limits<size_t>::max()) return false;
    const size_t needed = kLibraryBytes + (1 + static_cast<size_t>(threads)) * kBufferBytes +
                          static_cast<size_t>(threads) * kThreadStackBytes;
    MIXGPT_REQUIRE(
        needed <= headroom,
        format("memory: OpenBLAS reserves %.0f MiB of address space per thread: %d thread%s need%s "
               "%.0f MiB, but the address-space limit (ulimit -v) leaves %.0f MiB; raise the limit, or use "
               "fewer --threads",
               mebibytes(kBufferBytes), threads, threads == 1 ? "" : "s", threads == 1 ? "s" : "",
               mebibytes(needed), mebibytes(headroom)));
    return true;
}

// Takes `threads` buffers from OpenBLAS's pool at once and gives them back: the pool keeps them,
// so no later sgemm call (at most `threads` at a time) has to map one.
void fill_buffer_pool(void* library, int threads) {
    using Allocate = void*(int);
    using Free = void(void*);
    auto* allocate = reinterpret_cast<Allocate*>(dlsym(library, "blas_memory_alloc"));
    auto* free = reinterpret_cast<Free*>(dlsym(library, "blas_memory_free"));
    if (allocate == nullptr || free == nullptr) return;  // another OpenBLAS: it maps them when needed
    std::vector<void*> buffers;
    for (int i = 0; i < threads; ++i) {
        void* buffer = allocate(0);
        if (buffer == nullptr) break;  // the pool's positions are used up
        buffers.push_back(buffer);
    }
    for (void* buffer : buffers) free(buffer);
}

// dlopen with OMP_NUM_THREADS=1, so that OpenBLAS's start-up pool is one buffer; the variable is
// put back at once (libgomp read it long before, at process start). setenv is not safe while
// another thread reads the environment: the first backend is made before mixgpt's own threads
// (data loader, watchdog) start, and OpenMP's idle workers read none.
void* open_library() {
    const char* previous = std::getenv("OMP_NUM_THREADS");
    const std::string saved = previous != nullptr ? previous : "";
    setenv("OMP_NUM_THREADS", "1", 1);
    void* library = dlopen(kLibraryName, RTLD_NOW | RTLD_LOCAL);
    const std::string reason = library == nullptr ? dlerror() : "";
    if (previous != nullptr)
        setenv("OMP_NUM_THREADS", saved.c_str(), 1);
    else
        unsetenv("OMP_NUM_THREADS");
    MIXGPT_REQUIRE(library != nullptr, std::string("OpenBLAS: cannot load ") + kLibraryName + " (" + reason +
                                           "); scripts/setup.sh installs it (libopenblas0-openmp)");
    return library;
}

}  // namespace

void load_openblas(int threads) {
    const std::lock_guard<std::mutex> lock(g_load_mutex);
    if (g_sgemm.load() != nullptr) return;
    const bool limited = require_room(threads);
    void* library = open_library();
    void* sgemm = dlsym(library, "cblas_sgemm");
    MIXGPT_REQUIRE(sgemm != nullptr, std::string("OpenBLAS: ") + kLibraryName + " has no cblas_sgemm");
    if (limited) {
        fill_buffer_pool(library, threads);
        // libgomp starts its threads at the first parallel region, and exits the process when it
        // cannot: start them now, while there is room, so later figures count their stacks.
#pragma omp parallel
        {}
    }
    g_sgemm.store(reinterpret_cast<Sgemm*>(sgemm));
}

}  // namespace mixgpt::cpu

void cblas_sgemm(OPENBLAS_CONST enum CBLAS_ORDER order, OPENBLAS_CONST enum CBLAS_TRANSPOSE transpose_a,
                 OPENBLAS_CONST enum CBLAS_TRANSPOSE transpose_b, OPENBLAS_CONST blasint m,
                 OPENBLAS_CONST blasint n, OPENBLAS_CONST blasint k, OPENBLAS_CONST float alpha,
                 OPENBLAS_CONST float* a, OPENBLAS_CONST blasint lda, OPENBLAS_CONST float* b,
                 OPENBLAS_CONST blasint ldb, OPENBLAS_CONST float beta, float* c,
                 OPENBLAS_CONST blasint ldc) {
    using namespace mixgpt::cpu;
    Sgemm* real = g_sgemm.load(std::memory_order_acquire);
    if (real == nullptr) {
        load_openblas(omp_get_max_threads());
        real = g_sgemm.load();
    }
    real(order, transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
