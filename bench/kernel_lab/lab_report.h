// The kernel lab's results: one row per (kernel, shape), printed as a table beside the
// ceilings, or as JSON (scripts/compare_attention.py reads it), with each launched kernel's
// occupancy.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "bench/kernel_lab/lab_ceilings.h"
#include "bench/kernel_lab/lab_occupancy.h"

namespace mixgpt::lab {

struct DeviceInfo {
    std::string name;
    int device = 0;
    int driver_version = 0, runtime_version = 0;  // as CUDA reports them, e.g. 12040
    int multiprocessors = 0;
    size_t l2_bytes = 0;
    std::string precision;
    std::string sizes;    // "production" or "smoke" (lab_context.h: LabSizes)
    std::string date;     // UTC, ISO 8601
    std::string command;  // the command line of this run
};

enum class Rate { tflop_per_s, gb_per_s };

struct Row {
    std::string kernel;  // e.g. "flash_attention_forward", "layernorm_backward (backend)"
    std::string shape;   // for people, e.g. "B=16 T=1024 H=12 hd=64"
    std::vector<std::pair<std::string, int64_t>> dims;  // for programs: {"T", 1024}, ...
    double milliseconds = 0;                            // median per run
    Rate rate = Rate::gb_per_s;
    double achieved = 0;     // TFLOP/s or GB/s
    std::string validation;  // "ok ..." or "FAILED ..."
    bool valid = true;
};

// The ceiling a row's rate is a fraction of: the GEMM for TFLOP/s, the copy for GB/s.
double ceiling_of(const Row& row, const Ceilings& ceilings);

// The rows, then the occupancy of every kernel launched (registers 0: unknown, the simulator).
void print_table(std::FILE* out, const DeviceInfo& device, const Ceilings& ceilings,
                 const std::vector<Row>& rows, const std::vector<KernelOccupancy>& occupancy = {});
// The same as one JSON object (scripts/compare_attention.py and scripts/gpu_lease.sh read it).
std::string report_json(const DeviceInfo& device, const Ceilings& ceilings, const std::vector<Row>& rows,
                        const std::vector<KernelOccupancy>& occupancy = {});

}  // namespace mixgpt::lab
