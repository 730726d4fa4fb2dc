#include "cli/device_option.h"

namespace mixgpt::cli {

CLI::Option* add_device_option(CLI::App& command, std::string& device) {
    device = "auto";
    return command
        .add_option("--device", device,
                    "auto (CUDA when this build has it and a usable device exists, else CPU; the log "
                    "says which and why), cpu or cuda")
        ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
        ->capture_default_str();
}

}  // namespace mixgpt::cli
