// CUDA_CHECK, CUBLAS_CHECK and NCCL_CHECK, for CUDA translation units only.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "core/error.h"

#define MIXGPT_CUDA_OK(status) ((status) == cudaSuccess)
#define CUDA_CHECK(call) MIXGPT_CHECK_GEN(call, "CUDA", MIXGPT_CUDA_OK, cudaGetErrorString)
// After a kernel launch: the launch configuration error, if any.
#define CUDA_CHECK_LAST_LAUNCH() CUDA_CHECK(cudaGetLastError())

#define MIXGPT_CUBLAS_OK(status) ((status) == CUBLAS_STATUS_SUCCESS)
#define CUBLAS_CHECK(call) MIXGPT_CHECK_GEN(call, "cuBLAS", MIXGPT_CUBLAS_OK, cublasLtGetStatusString)

#ifdef MIXGPT_WITH_NCCL
#include <nccl.h>
#define MIXGPT_NCCL_OK(status) ((status) == ncclSuccess)
#define NCCL_CHECK(call) MIXGPT_CHECK_GEN(call, "NCCL", MIXGPT_NCCL_OK, ncclGetErrorString)
#endif
