// What the Hugging Face interop tests of both families share: a training run exported to a folder,
// a refused import's message (checked to be one line that left no output folder), a
// single-threaded evaluation of a checkpoint, and the independent NumPy reader's verdicts.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "eval/run_eval.h"
#include "interop/export.h"
#include "interop/import.h"
#include "interop/reference_outputs.h"
#include "model/checkpoint.h"
#include "tests/test_python_support.h"
#include "tests/test_support.h"
#include "tests/test_tokenizer_support.h"
#include "tests/test_train_support.h"
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

// A suite's one training run and its export, made once for all its tests (SetUpTestSuite), and a
// scratch folder per test. Suite (CRTP) gives kName, the folders' prefix, and
// `static TrainOptions options(const std::string& output_dir)`, the run's options.
template <typename Suite>
class ExportedRunTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        directory_ = new TempDirectory(std::string(Suite::kName));
        train_and_export(Suite::options(directory_->file("run")), directory_->file("hf"));
    }
    static void TearDownTestSuite() {
        delete directory_;
        directory_ = nullptr;
    }
    static std::string run() { return directory_->file("run"); }
    static std::string exported() { return directory_->file("hf"); }
    // Imports the export into the scratch folder, expects its parameters to be the run's last
    // checkpoint's bit for bit and its evaluation the run's exactly; the imported model's config.
    GPTConfig expect_bit_identical_round_trip() const {
        const std::string imported = scratch_.file("imported");
        interop::import_hf({exported(), imported, false});
        const Checkpoint original = read_checkpoint(newest_valid_checkpoint(run() + "/checkpoints"));
        const Checkpoint round_trip = read_checkpoint(newest_valid_checkpoint(imported + "/checkpoints"));
        EXPECT_EQ(original.parameters, round_trip.parameters);
        const EvalReport before = evaluate_on_one_thread(run()), after = evaluate_on_one_thread(imported);
        EXPECT_GT(before.totals.tokens, 0);
        EXPECT_EQ(after.totals.nats, before.totals.nats);  // exactly
        return round_trip.config;
    }
    // A copy of the export in the test's scratch folder, to spoil.
    std::string copy_of_export(const std::string& name) const {
        const std::string copy = scratch_.file(name);
        std::filesystem::copy(exported(), copy, std::filesystem::copy_options::recursive);
        return copy;
    }

    static inline TempDirectory* directory_ = nullptr;
    TempDirectory scratch_{std::string(Suite::kName) + "_case"};
};

// scripts/check_hf_export.py on `exported` against `mixgpt eval` of `run` within 1e-6 relative,
// with `run`'s reference outputs (logits of 20 tokens, 6 greedy tokens after "the cat"), expected
// to pass; then on `altered`, a copy with a change the reader must see, expected to fail. False,
// with nothing run, when /usr/bin/python3 lacks numpy or h5py.
inline bool check_with_numpy_reader(const TempDirectory& scratch, const std::string& run,
                                    const std::string& exported, const std::string& altered) {
    if (run_python({"-c", "import numpy, h5py"}, scratch.file("probe.txt")) != 0) return false;
    const std::string checker = find_checker();
    EXPECT_FALSE(checker.empty()) << "scripts/check_hf_export.py not found above the test binary";
    const std::string dataset = testing_support::tiny_dataset().dataset_path;
    const std::string eval_json = scratch.write("eval.json", eval_report_json(evaluate_on_one_thread(run)));
    interop::ReferenceOptions reference;
    reference.source = run;
    reference.output = scratch.file("reference");
    reference.logits_tokens = 20;
    reference.prompt = "the cat";
    reference.new_tokens = 6;
    reference.threads = 1;
    interop::write_reference_outputs(reference);
    const std::string output = scratch.file("check.txt"), altered_output = scratch.file("altered.txt");
    EXPECT_EQ(run_python({checker, exported, "--dataset", dataset, "--eval-json", eval_json, "--tolerance", "1e-6",
                          "--reference", reference.output},
                         output),
              0)
        << ::mixgpt::testing::read_file(output);
    EXPECT_NE(::mixgpt::testing::read_file(output).find(" tokens, identical"), std::string::npos) << ::mixgpt::testing::read_file(output);
    EXPECT_EQ(run_python({checker, altered, "--dataset", dataset, "--eval-json", eval_json}, altered_output), 1)
        << ::mixgpt::testing::read_file(altered_output);
    return true;
}

}  // namespace mixgpt::test
