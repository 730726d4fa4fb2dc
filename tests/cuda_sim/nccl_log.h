// The simulated NCCL's call log (nccl.cpp): every collective of this process as it runs on its
// stream, so tests can tell which NCCL collectives a code path makes, with what counts.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <string>
#include <vector>

namespace mixgpt::cuda_sim {

struct NcclCall {
    std::string name;  // "ncclAllReduce", "ncclReduceScatter", "ncclAllGather"
    size_t count = 0;  // as passed: per rank for ncclReduceScatter (recvcount) and ncclAllGather (sendcount)
    ncclDataType_t type = ncclFloat32;
};

// The collectives run since the last clear_nccl_calls(), in the order they ran.
std::vector<NcclCall> nccl_calls();
void clear_nccl_calls();

}  // namespace mixgpt::cuda_sim
