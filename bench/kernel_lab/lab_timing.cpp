#include "bench/kernel_lab/lab_timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "core/cuda_check.h"

namespace mixgpt::lab {
namespace {

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double host_milliseconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

double time_with_events(cudaStream_t stream, const std::function<void(int)>& run,
                        const TimingSettings& settings) {
    int index = 0;
    for (int i = 0; i < settings.warmup; ++i) run(index++);
    std::vector<cudaEvent_t> events(2 * static_cast<size_t>(settings.samples));
    for (cudaEvent_t& event : events) CUDA_CHECK(cudaEventCreate(&event));
    for (int i = 0; i < settings.samples; ++i) {
        CUDA_CHECK(cudaEventRecord(events[2 * i], stream));
        run(index++);
        CUDA_CHECK(cudaEventRecord(events[2 * i + 1], stream));
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<double> milliseconds;
    for (int i = 0; i < settings.samples; ++i) {
        float elapsed = 0.f;
        CUDA_CHECK(cudaEventElapsedTime(&elapsed, events[2 * i], events[2 * i + 1]));
        milliseconds.push_back(elapsed);
    }
    for (cudaEvent_t event : events) CUDA_CHECK(cudaEventDestroy(event));
    return median(milliseconds);
}

double time_batched(const std::function<void(int)>& run, const std::function<void()>& wait,
                    const TimingSettings& settings) {
    int index = 0;
    wait();
    const auto warmup_start = std::chrono::steady_clock::now();
    for (int i = 0; i < settings.warmup; ++i) run(index++);
    wait();
    const double warmup_each = host_milliseconds_since(warmup_start) / std::max(settings.warmup, 1);
    const int batch = std::clamp(static_cast<int>(std::ceil(2.0 / std::max(warmup_each, 1e-3))), 1, 200);
    std::vector<double> milliseconds;
    for (int i = 0; i < settings.samples; ++i) {
        const auto start = std::chrono::steady_clock::now();
        for (int j = 0; j < batch; ++j) run(index++);
        wait();
        milliseconds.push_back(host_milliseconds_since(start) / batch);
    }
    return median(milliseconds);
}

size_t l2_cache_bytes(int device) {
    int bytes = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device));
    return static_cast<size_t>(bytes);
}

int rotation_sets(size_t set_bytes, size_t l2_bytes) {
    return static_cast<int>(2 * l2_bytes / std::max<size_t>(set_bytes, 1)) + 1;
}

}  // namespace mixgpt::lab
