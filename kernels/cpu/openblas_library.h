// OpenBLAS, loaded when the first CPU backend is made (dlopen) instead of when the process starts.
//
// Why: OpenBLAS 0.3.21's constructor reserves a 128 MiB buffer per processor, and its allocator
// retries a failed reservation forever (driver/others/memory.c, blas_memory_alloc). Linked directly,
// every mixgpt command, `info` included, hung before main under an address-space limit (ulimit -v)
// below about 600 MB. Loaded here, commands that multiply no matrices never load it, and the others
// first check that the limit leaves room for every buffer OpenBLAS will reserve:
//   - at load: one buffer (OMP_NUM_THREADS=1 while it loads; OpenBLAS sizes its start-up pool by
//     that variable, not by omp_set_num_threads), plus the library itself;
//   - later: one buffer per thread that calls sgemm at the same time, i.e. per OpenMP thread
//     (mixgpt calls sgemm only inside parallel regions, where OpenBLAS runs single-threaded, or
//     with one thread).
// Under a limit, the per-thread buffers are taken from OpenBLAS's pool at load and given back to
// it (blas_memory_alloc/blas_memory_free, exported by OpenBLAS): the pool keeps them, so no sgemm
// call maps memory later, when the model's allocations may have used the room. The memory check
// of `train` and `bench` then sees them in the address space already.
// This file also defines cblas_sgemm, which forwards to the library's (loading it with the current
// thread count if no backend did).
#pragma once

namespace mixgpt::cpu {

// Loads OpenBLAS once for up to `threads` concurrent callers; later calls return at once. Throws
// Error when the library cannot be loaded, or when the address-space limit leaves too little room.
void load_openblas(int threads);

}  // namespace mixgpt::cpu
