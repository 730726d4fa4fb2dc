#include "cli/fp8_options.h"

#include "core/error.h"

namespace mixgpt::cli {

void add_fp8_options(CLI::App& command, Fp8Arguments& arguments) {
    const auto keep = [&](CLI::Option* option) {
        arguments.options.push_back(option->group("FP8 (--precision fp8)"));
        return option;
    };
    keep(command.add_option("--fp8-format", arguments.format,
                            "hybrid (E4M3 inputs and weights, E5M2 gradients) or e4m3 (E4M3 throughout)"))
        ->capture_default_str();
    keep(command.add_option("--fp8-scaling", arguments.scaling, "per-tensor scaling: delayed or current"))
        ->capture_default_str();
    keep(command.add_option("--fp8-amax-history", arguments.amax_history, "delayed scaling: steps of amax history"))
        ->capture_default_str();
    keep(command.add_option("--fp8-amax-compute", arguments.amax_compute,
                            "delayed scaling: max (of the history) or most_recent"))
        ->capture_default_str();
    keep(command.add_option("--fp8-margin", arguments.margin, "scale = fp8_max / amax / 2^margin"))
        ->capture_default_str();
    keep(command.add_option("--fp8-bf16-layers", arguments.bf16_layers,
                            "blocks kept in bf16: first, last and block indices, comma-separated"));
    keep(command.add_flag("--fp8-head", arguments.head, "the output head in FP8 too"));
}

Fp8Options parse_fp8_arguments(const Fp8Arguments& arguments, Precision precision) {
    for (const CLI::Option* option : arguments.options)
        if (option->count() > 0 && precision != Precision::fp8)
            throw Error(option->get_name() + ": only with --precision fp8 (the precision is " +
                        precision_name(precision) + ")");
    Fp8Options options;
    options.format = arguments.format;
    options.scaling.scaling = parse_fp8_scaling(arguments.scaling);
    options.scaling.history_length = arguments.amax_history;
    options.scaling.amax_compute = parse_amax_compute(arguments.amax_compute);
    options.scaling.margin = arguments.margin;
    options.bf16_layers = arguments.bf16_layers;
    options.head = arguments.head;
    check_fp8_options(options, 0);
    return options;
}

}  // namespace mixgpt::cli
