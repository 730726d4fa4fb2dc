// What the Hugging Face interop tests of both families share: a training run exported to a folder,
// a refused import's message (checked to be one line that left no output folder) and a
// single-threaded evaluation of a checkpoint.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "eval/run_eval.h"
#include "interop/export.h"
#include "interop/import.h"
#include "tests/test_support.h"
#include "train/trainer.h"

namespace mixgpt::test {

// Trains with `options` and exports the run's last checkpoint to `hf_folder`; export's result.
inline interop::ExportResult train_and_export(const TrainOptions& options, const std::string& hf_folder) {
    run_training(options);
    interop::ExportOptions export_options;
    export_options.source = options.output_dir;
    export_options.output = hf_folder;
    return interop::export_hf(export_options);
}

// Imports `folder` into `scratch`, expecting a refusal; returns its message.
inline std::string refused_import_message(const TempDirectory& scratch, const std::string& folder) {
    const std::string output =
        scratch.file("imported_" + std::filesystem::path(folder).filename().string());
    const std::string message = error_of([&] { interop::import_hf({folder, output, false}); });
    EXPECT_FALSE(std::filesystem::exists(output)) << "a refused import left " << output;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    return message;
}

inline EvalReport evaluate_on_one_thread(const std::string& checkpoint) {
    EvalOptions options;
    options.checkpoint = checkpoint;
    options.device.threads = 1;
    return run_evaluation(options);
}

}  // namespace mixgpt::test
