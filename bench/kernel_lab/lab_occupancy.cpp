#include "bench/kernel_lab/lab_occupancy.h"

#include <cuda_runtime.h>
#include <cxxabi.h>

#include <cstdlib>
#include <memory>

#include "core/cuda_check.h"

namespace mixgpt::lab {
namespace {

void erase_all(std::string& text, const std::string& part) {
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part))
        text.erase(at, part.size());
}

}  // namespace

std::string readable_kernel_name(const char* name) {
    int status = 0;
    const std::unique_ptr<char, void (*)(void*)> demangled(
        abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
    std::string text = status == 0 && demangled ? demangled.get() : name;
    if (text.rfind("void ", 0) == 0) text.erase(0, 5);
    // The parameter list: the last '(' at template depth 0.
    int depth = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '<') ++depth;
        if (text[i] == '>') --depth;
        if (text[i] == '(' && depth == 0 && text.compare(i, 21, "(anonymous namespace)") != 0) {
            text.erase(i);
            break;
        }
    }
    for (const char* part : {"(anonymous namespace)::", "mixgpt::cuda::", "mixgpt::lab::", "flash::"})
        erase_all(text, part);
    return text;
}

std::vector<KernelOccupancy> occupancy_of(const std::vector<cuda::KernelLaunch>& launches) {
    std::vector<KernelOccupancy> rows;
    for (const cuda::KernelLaunch& launch : launches) {
        const char* name = nullptr;
        CUDA_CHECK(cudaFuncGetName(&name, launch.kernel));
        cudaFuncAttributes attributes{};
        CUDA_CHECK(cudaFuncGetAttributes(&attributes, launch.kernel));
        KernelOccupancy row;
        row.kernel = readable_kernel_name(name);
        row.threads = launch.threads;
        row.registers = attributes.numRegs;
        row.static_shared_bytes = attributes.sharedSizeBytes;
        row.dynamic_shared_bytes = launch.dynamic_shared_bytes;
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &row.blocks_per_multiprocessor, launch.kernel, launch.threads, launch.dynamic_shared_bytes));
        row.warps_per_multiprocessor = row.blocks_per_multiprocessor * ((launch.threads + 31) / 32);
        rows.push_back(row);
    }
    return rows;
}

}  // namespace mixgpt::lab
