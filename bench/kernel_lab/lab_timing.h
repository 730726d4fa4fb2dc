// How the kernel lab times a kernel: warm-up runs, then many timed samples, the median
// reported. Inputs rotate through sets whose total size exceeds twice the L2 cache, so no
// sample finds its inputs in L2 from the sample before.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>

namespace mixgpt::lab {

struct TimingSettings {
    int warmup = 5;    // untimed runs first
    int samples = 30;  // timed samples; the median is reported
};

// Milliseconds per run, median over the samples. `run(i)` enqueues run number i (use set
// i % sets of the rotation) on `stream`; each sample is bracketed by CUDA events.
double time_with_events(cudaStream_t stream, const std::function<void(int)>& run,
                        const TimingSettings& settings);

// For work on a stream the lab cannot record events on (a Backend's own stream): each sample
// enqueues a batch of runs and waits for them with `wait`, timed on the host clock; the batch
// is long enough (about 2 ms, from the warm-up) that launch and wait latency fade out.
double time_batched(const std::function<void(int)>& run, const std::function<void()>& wait,
                    const TimingSettings& settings);

// L2 cache size of the device in bytes (cudaDevAttrL2CacheSize).
size_t l2_cache_bytes(int device);

// How many sets of `set_bytes` each make more than twice `l2_bytes` together (at least 1).
int rotation_sets(size_t set_bytes, size_t l2_bytes);

}  // namespace mixgpt::lab
