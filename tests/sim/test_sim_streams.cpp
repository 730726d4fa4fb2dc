// The simulator's streams run their work lazily (tests/cuda_sim/runtime.h): only when the host
// waits for it, directly or through an event. These tests pin that down with the runtime calls
// themselves, since the races they expose depend on it: a pinned upload reads its source when the
// stream runs it, a pageable one when it is issued, and a stream waiting for another's event
// runs that stream's work first, and no more of it.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>

namespace {

struct Memory {
    int32_t* device = nullptr;
    int32_t* pinned = nullptr;
    Memory() {
        EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&device), sizeof(int32_t)), cudaSuccess);
        EXPECT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), sizeof(int32_t)), cudaSuccess);
    }
    ~Memory() {
        cudaFree(device);
        cudaFreeHost(pinned);
    }
    int32_t read_device() {
        int32_t value = -1;
        EXPECT_EQ(cudaMemcpy(&value, device, sizeof value, cudaMemcpyDeviceToHost), cudaSuccess);
        return value;
    }
};

TEST(SimStreams, APinnedUploadReadsItsSourceWhenTheStreamRunsIt) {
    Memory memory;
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    *memory.pinned = 1;
    ASSERT_EQ(cudaMemcpyAsync(memory.device, memory.pinned, sizeof(int32_t), cudaMemcpyHostToDevice, stream),
              cudaSuccess);
    *memory.pinned = 2;  // a race on a GPU; here the copy has not run yet
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(memory.read_device(), 2);

    const int32_t pageable = 3;
    ASSERT_EQ(cudaMemcpyAsync(memory.device, &pageable, sizeof pageable, cudaMemcpyHostToDevice, stream),
              cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(memory.read_device(), 3);
    cudaStreamDestroy(stream);
}

TEST(SimStreams, WaitingForAnEventRunsTheOtherStreamUpToIt) {
    Memory memory;
    cudaStream_t producer = nullptr, consumer = nullptr;
    cudaEvent_t written = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaEventCreateWithFlags(&written, cudaEventDisableTiming), cudaSuccess);
    int32_t seen = -1;
    int32_t* seen_pinned = nullptr;
    ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&seen_pinned), sizeof(int32_t)), cudaSuccess);

    ASSERT_EQ(cudaMemsetAsync(memory.device, 0, sizeof(int32_t), producer), cudaSuccess);
    ASSERT_EQ(cudaEventRecord(written, producer), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(memory.device, 0x11, sizeof(int32_t), producer),
              cudaSuccess);  // after the event
    ASSERT_EQ(cudaStreamWaitEvent(consumer, written, 0), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(seen_pinned, memory.device, sizeof(int32_t), cudaMemcpyDeviceToHost, consumer),
              cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(consumer), cudaSuccess);
    seen = *seen_pinned;
    EXPECT_EQ(seen, 0) << "the consumer saw the producer's work past the event";
    ASSERT_EQ(cudaStreamSynchronize(producer), cudaSuccess);
    EXPECT_EQ(memory.read_device(), 0x11111111);

    cudaFreeHost(seen_pinned);
    cudaEventDestroy(written);
    cudaStreamDestroy(consumer);
    cudaStreamDestroy(producer);
}

}  // namespace
