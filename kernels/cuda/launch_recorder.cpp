#include "kernels/cuda/launch_recorder.h"

#include <atomic>

#include "core/error.h"

namespace mixgpt::cuda {
namespace {

std::atomic<LaunchRecorder*> g_recorder{nullptr};

}  // namespace

LaunchRecorder::LaunchRecorder() {
    LaunchRecorder* none = nullptr;
    if (!g_recorder.compare_exchange_strong(none, this))
        throw Error("cuda LaunchRecorder: another recorder is already recording");
}

LaunchRecorder::~LaunchRecorder() { g_recorder.store(nullptr); }

std::vector<KernelLaunch> LaunchRecorder::launches() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return launches_;
}

void LaunchRecorder::note(const KernelLaunch& launch) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const KernelLaunch& known : launches_)
        if (known.kernel == launch.kernel && known.threads == launch.threads &&
            known.dynamic_shared_bytes == launch.dynamic_shared_bytes)
            return;
    launches_.push_back(launch);
}

void note_launch(const void* kernel, dim3 block, size_t dynamic_shared_bytes) {
    LaunchRecorder* recorder = g_recorder.load(std::memory_order_acquire);
    if (recorder != nullptr)
        recorder->note({kernel, static_cast<int>(block.x * block.y * block.z), dynamic_shared_bytes});
}

}  // namespace mixgpt::cuda
