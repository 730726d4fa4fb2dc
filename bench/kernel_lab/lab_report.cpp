#include "bench/kernel_lab/lab_report.h"

#include <nlohmann/json.hpp>

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
                 const std::vector<Row>& rows) {
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
}

void print_json(std::FILE* out, const DeviceInfo& device, const Ceilings& ceilings,
                const std::vector<Row>& rows) {
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
    std::fprintf(out, "%s\n", json.dump(2).c_str());
}

}  // namespace mixgpt::lab
