// kernels/cuda/cublaslt_library.cpp: cuBLASLt is loaded on first use, not linked. In a CUDA build
// the functions mixgpt calls must reach the real library (no GPU needed for these two; the
// message is the real library's, not the simulator's).
#include <gtest/gtest.h>

#ifdef MIXGPT_WITH_CUDA
#include <cublasLt.h>
#include <link.h>

#include <cstring>
#include <string>
#include <utility>
#endif

namespace mixgpt {
namespace {

#ifdef MIXGPT_WITH_CUDA
// Whether a library whose name contains `part` is loaded into this process now.
bool library_loaded(const char* part) {
    std::pair<const char*, bool> search(part, false);
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
            auto* state = static_cast<std::pair<const char*, bool>*>(data);
            if (info->dlpi_name != nullptr && std::strstr(info->dlpi_name, state->first) != nullptr)
                state->second = true;
            return 0;
        },
        &search);
    return search.second;
}
#endif

TEST(CublasLtLibrary, LoadedOnFirstCallAndForwarded) {
#ifdef MIXGPT_WITH_CUDA
    EXPECT_EQ(cublasLtGetVersion() / 10000, static_cast<size_t>(CUBLAS_VER_MAJOR));
    EXPECT_TRUE(library_loaded("libcublasLt"));
    EXPECT_NE(std::string(cublasLtGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED)).find("not supported"),
              std::string::npos);
#else
    GTEST_SKIP() << "CPU-only build: no cuBLASLt";
#endif
}

}  // namespace
}  // namespace mixgpt
