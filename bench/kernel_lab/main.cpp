// mixgpt_kernel_lab: validates, then times, every hot CUDA kernel of mixgpt against the
// ceilings measured in the same run (bench/README.md). Results go to stdout as a table, or
// as JSON with --json, and with --json-out also as JSON to a file (one run, both forms);
// progress and validation details go to stderr.
#include <cuda_runtime.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "bench/kernel_lab/attention_lab.h"
#include "bench/kernel_lab/backend_lab.h"
#include "bench/kernel_lab/fp8_gemm_lab.h"
#include "bench/kernel_lab/lab_ceilings.h"
#include "bench/kernel_lab/lab_context.h"
#include "bench/kernel_lab/lab_report.h"
#include "bench/kernel_lab/tensor_core_probe.h"
#include "core/cuda_check.h"
#include "core/log.h"
#include "core/output_file.h"
#include "kernels/cuda/flash_attention.h"
#include "kernels/cuda/launch_recorder.h"

namespace mixgpt::lab {
namespace {

struct LabOptions {
    int device = 0;
    std::string precision = "bf16";
    bool attention_only = false;
    bool backend_only = false;
    std::vector<int> attention_lengths;
    bool json = false;
    std::string json_out;
    int warmup = 5;
    int samples = 30;
    uint64_t seed = 1;
    LabSizes sizes = LabSizes::production;
    bool tensor_core_probe = false;
    int probe_tiles = 4096;
    std::string probe_failures;
};

std::string utc_now() {
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    char text[32];
    std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
    return text;
}

const char* sizes_name(LabSizes sizes) { return sizes == LabSizes::smoke ? "smoke" : "production"; }

DeviceInfo device_info(int device, const std::string& precision, LabSizes sizes, const std::string& command) {
    cudaDeviceProp properties{};
    CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
    DeviceInfo info;
    info.name = properties.name;
    info.device = device;
    CUDA_CHECK(cudaDriverGetVersion(&info.driver_version));
    CUDA_CHECK(cudaRuntimeGetVersion(&info.runtime_version));
    info.multiprocessors = properties.multiProcessorCount;
    info.l2_bytes = l2_cache_bytes(device);
    info.precision = precision;
    info.sizes = sizes_name(sizes);
    info.date = utc_now();
    info.command = command;
    return info;
}

// --tensor-core-probe: one line per product on stdout; exit 0 when every one is bit-exact.
int run_probe(const LabOptions& options) {
    CUDA_CHECK(cudaSetDevice(options.device));
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    bool all_exact = true;
    for (const ProbeLine& line :
         run_tensor_core_probe(options.device, stream, options.probe_tiles, options.seed, options.probe_failures)) {
        std::printf("%s\n", line.text.c_str());
        all_exact = all_exact && line.exact;
    }
    std::fflush(stdout);
    CUDA_CHECK(cudaStreamDestroy(stream));
    return all_exact ? 0 : 1;
}

int run(const LabOptions& options, const std::string& command) {
    const Precision precision = parse_precision(options.precision);
    const std::unique_ptr<Backend> gpu = make_backend({"cuda", options.device, precision, 0});
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const bool smoke = options.sizes == LabSizes::smoke;
    LabContext context(*gpu);
    context.device = options.device;
    context.precision = precision;
    context.stream = stream;
    context.l2_bytes = smoke ? kSmokeCacheBytes : l2_cache_bytes(options.device);
    context.timing = {options.warmup, options.samples};
    context.seed = options.seed;
    context.sizes = options.sizes;
    context.attention_lengths = options.attention_lengths;
    const DeviceInfo info = device_info(options.device, options.precision, options.sizes, command);
    log_info(format("kernel lab on %s, %s sizes: measuring the ceilings", gpu->name().c_str(),
                    sizes_name(options.sizes)));
    const CeilingSizes& ceiling_sizes = smoke ? kSmokeCeilings : kProductionCeilings;
    context.ceilings.copy_gb_per_s =
        measure_copy_bandwidth(*gpu, stream, ceiling_sizes.copy_bytes, context.timing);
    context.ceilings.gemm_tflop_per_s =
        measure_gemm_throughput(*gpu, stream, ceiling_sizes.gemm_size, context.timing);

    // A section that throws (a kernel that fails to launch, say) is reported and the next one
    // runs, so one failure still leaves the other sections' rows and the table.
    std::vector<Row> rows;
    bool all_sections_ran = true;
    const cuda::LaunchRecorder launches;  // every kernel the sections launch, for the occupancy table
    const auto run_section = [&](const char* name, const std::function<std::vector<Row>()>& section) {
        try {
            const std::vector<Row> section_rows = section();
            rows.insert(rows.end(), section_rows.begin(), section_rows.end());
        } catch (const std::exception& error) {
            all_sections_ran = false;
            log_message(LogLevel::error, format("kernel lab: %s stopped: %s", name, error.what()));
        }
    };
    if (options.backend_only)
        log_info("kernel lab: flash attention not run (--backend-only)");
    else if (cuda::flash_attention_supported(activation_dtype(precision), 64))
        run_section("flash attention", [&] { return attention_rows(context); });
    else
        log_warning("kernel lab: flash attention runs in bf16 or fp16 only; skipped in " + options.precision);
    if (!options.attention_only) run_section("backend ops", [&] { return backend_rows(context); });
    if (!options.attention_only) run_section("fp8 gemm", [&] { return fp8_gemm_rows(context); });
    const std::vector<KernelOccupancy> occupancy = occupancy_of(launches.launches());
    const std::string json = report_json(info, context.ceilings, rows, occupancy);
    if (options.json)
        std::fputs(json.c_str(), stdout);
    else
        print_table(stdout, info, context.ceilings, rows, occupancy);
    std::fflush(stdout);
    if (!options.json_out.empty()) write_whole_file(options.json_out, json);
    CUDA_CHECK(cudaStreamDestroy(stream));
    const bool all_valid = std::all_of(rows.begin(), rows.end(), [](const Row& row) { return row.valid; });
    if (!all_valid)
        log_message(LogLevel::error, "kernel lab: some kernels failed validation (see the table)");
    return all_valid && all_sections_ran ? 0 : 1;
}

}  // namespace
}  // namespace mixgpt::lab

int main(int argc, char** argv) {
    mixgpt::lab::LabOptions options;
    CLI::App app{
        "mixgpt_kernel_lab: validate, then time, the hot CUDA kernels against the copy-bandwidth "
        "and BF16-GEMM ceilings measured in the same run.",
        "mixgpt_kernel_lab"};
    app.add_option("--device", options.device, "CUDA device index")->check(CLI::NonNegativeNumber);
    app.add_option("--precision", options.precision,
                   "activation precision: bf16 or fp16 (attention needs one)")
        ->check(CLI::IsMember({"fp32", "tf32", "bf16", "fp16"}));
    CLI::Option* attention_only = app.add_flag("--attention-only", options.attention_only,
                                               "flash attention only (scripts/compare_attention.py)");
    app.add_flag("--backend-only", options.backend_only, "the backend ops only, no flash attention")
        ->excludes(attention_only);
    app.add_option("--attention-lengths", options.attention_lengths,
                   "comma-separated T of the attention shapes timed (default: all of the sizes' T)")
        ->delimiter(',');
    app.add_flag("--json", options.json, "print JSON instead of the table");
    app.add_option("--json-out", options.json_out,
                   "also write the JSON to this file (written whole, or not at all)");
    app.add_option("--warmup", options.warmup, "untimed runs before the samples")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--samples", options.samples, "timed samples per kernel (median reported)")
        ->check(CLI::PositiveNumber);
    app.add_option("--seed", options.seed, "seed of the random inputs");
    CLI::Option* probe = app.add_flag(
        "--tensor-core-probe", options.tensor_core_probe,
        "instead of the lab: compare the tensor cores' outputs bit for bit with the model the CUDA "
        "simulator computes with (kernels/tensor_core_model.h), one line per product");
    app.add_option("--probe-tiles", options.probe_tiles, "random mma.sync tiles per input type")
        ->check(CLI::NonNegativeNumber)
        ->needs(probe);
    app.add_option("--probe-failures", options.probe_failures,
                   "append the inputs and outputs of every tile or product that differs to this file")
        ->needs(probe);
    std::string sizes = "production";
    app.add_option("--sizes", sizes,
                   "production: the GPT-2 124M shapes; smoke: small shapes that run every path of the "
                   "lab in seconds on the CUDA simulator (build/mixgpt_kernel_lab_sim), its times "
                   "meaningless; warm-up 1 and 3 samples unless given")
        ->check(CLI::IsMember({"production", "smoke"}));
    CLI11_PARSE(app, argc, argv);
    if (sizes == "smoke") {
        options.sizes = mixgpt::lab::LabSizes::smoke;
        if (app.count("--warmup") == 0) options.warmup = 1;
        if (app.count("--samples") == 0) options.samples = 3;
    }
    try {
        mixgpt::lab::attention_shapes(options.sizes, options.attention_lengths);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "mixgpt_kernel_lab: --attention-lengths: %s\n", error.what());
        return 2;
    }
    std::string command;
    for (int i = 0; i < argc; ++i) command += (i > 0 ? " " : "") + std::string(argv[i]);
    try {
        if (options.tensor_core_probe) return mixgpt::lab::run_probe(options);
        return mixgpt::lab::run(options, command);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "mixgpt_kernel_lab: error: %s\n", error.what());
        return 1;
    }
}
