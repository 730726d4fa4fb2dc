#include "bench/kernel_lab/lab_report.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

namespace mixgpt::lab {
namespace {

const char* unit_of(Rate rate) { return rate == Rate::tflop_per_s ? "TFLOP/s" : "GB/s"; }

std::string version_text(int version) {
    return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

}  // namespace

double ceiling_of(const Row& row, const Ceilings& ceilings) {
    return row.rate == Rate::tflop_per_s ? ceilings.gemm_tflop_per_s : ceilings.copy_gb_per_s;
}

void print_table(std::FILE* out, const DeviceInfo& device, const Ceilings& ceilings,
                 const std::vector<Row>& rows, const std::vector<KernelOccupancy>& occupancy) {
    std::fprintf(out, "device %d: %s, %d SMs, L2 %.0f MiB, driver %s, runtime %s\n", device.device,
                 device.name.c_str(), device.multiprocessors,
                 static_cast<double>(device.l2_bytes) / (1 << 20),
                 version_text(device.driver_version).c_str(), version_text(device.runtime_version).c_str());
    std::fprintf(out, "date %s, precision %s, sizes %s, command: %s\n", device.date.c_str(),
                 device.precision.c_str(), device.sizes.c_str(), device.command.c_str());
    std::fprintf(
        out, "ceilings: device-to-device copy %.0f GB/s (read + write), cuBLASLt bf16 GEMM %.0f TFLOP/s\n\n",
        ceilings.copy_gb_per_s, ceilings.gemm_tflop_per_s);
    std::fprintf(out, "%-38s %-28s %10s %10s %-8s %9s  %s\n", "kernel", "shape", "ms", "achieved", "unit",
                 "ceiling", "validation");
    for (const Row& row : rows)
        std::fprintf(out, "%-38s %-28s %10.4f %10.1f %-8s %8.1f%%  %s\n", row.kernel.c_str(),
                     row.shape.c_str(), row.milliseconds, row.achieved, unit_of(row.rate),
                     100.0 * row.achieved / ceiling_of(row, ceilings), row.validation.c_str());
    if (occupancy.empty()) return;
    std::fprintf(out,
                 "\noccupancy per kernel launched (cudaOccupancyMaxActiveBlocksPerMultiprocessor, "
                 "cudaFuncGetAttributes)%s\n",
                 std::any_of(occupancy.begin(), occupancy.end(),
                             [](const KernelOccupancy& k) { return k.registers == 0; })
                     ? "; registers and static shared memory unknown (-): the simulator answers from the "
                       "device's limits, the launch's threads and its dynamic shared memory"
                     : "");
    std::fprintf(out, "%-56s %7s %9s %12s %13s %9s %8s\n", "kernel", "threads", "registers", "static smem",
                 "dynamic smem", "blocks/SM", "warps/SM");
    for (const KernelOccupancy& k : occupancy) {
        const std::string registers = k.registers == 0 ? "-" : std::to_string(k.registers);
        const std::string static_shared = k.registers == 0 ? "-" : std::to_string(k.static_shared_bytes);
        std::fprintf(out, "%-56s %7d %9s %12s %13zu %9d %8d\n", k.kernel.c_str(), k.threads,
                     registers.c_str(), static_shared.c_str(), k.dynamic_shared_bytes,
                     k.blocks_per_multiprocessor, k.warps_per_multiprocessor);
    }
}

std::string report_json(const DeviceInfo& device, const Ceilings& ceilings, const std::vector<Row>& rows,
                        const std::vector<KernelOccupancy>& occupancy) {
    nlohmann::ordered_json json;
    json["device"] = {{"index", device.device},
                      {"name", device.name},
                      {"multiprocessors", device.multiprocessors},
                      {"l2_bytes", device.l2_bytes},
                      {"driver", version_text(device.driver_version)},
                      {"runtime", version_text(device.runtime_version)}};
    json["date"] = device.date;
    json["command"] = device.command;
    json["precision"] = device.precision;
    json["sizes"] = device.sizes;
    json["ceilings"] = {{"copy_gb_per_s", ceilings.copy_gb_per_s},
                        {"gemm_tflop_per_s", ceilings.gemm_tflop_per_s}};
    json["rows"] = nlohmann::ordered_json::array();
    for (const Row& row : rows) {
        nlohmann::ordered_json dims = nlohmann::ordered_json::object();
        for (const auto& [name, value] : row.dims) dims[name] = value;
        json["rows"].push_back({{"kernel", row.kernel},
                                {"shape", row.shape},
                                {"dims", dims},
                                {"milliseconds", row.milliseconds},
                                {"unit", unit_of(row.rate)},
                                {"achieved", row.achieved},
                                {"fraction_of_ceiling", row.achieved / ceiling_of(row, ceilings)},
                                {"validation", row.validation},
                                {"valid", row.valid}});
    }
    json["occupancy"] = nlohmann::ordered_json::array();
    for (const KernelOccupancy& k : occupancy)
        json["occupancy"].push_back({{"kernel", k.kernel},
                                     {"threads", k.threads},
                                     {"registers", k.registers},  // 0: unknown (the simulator)
                                     {"static_shared_bytes", k.static_shared_bytes},
                                     {"dynamic_shared_bytes", k.dynamic_shared_bytes},
                                     {"blocks_per_multiprocessor", k.blocks_per_multiprocessor},
                                     {"warps_per_multiprocessor", k.warps_per_multiprocessor}});
    return json.dump(2) + "\n";
}

}  // namespace mixgpt::lab
