// Hugging Face interop of the Llama-style family with a sliding window on every layer (--window,
// issue 39): `export` writes a MistralForCausalLM folder (model_type mistral, sliding_window W);
// the independent NumPy reader (scripts/check_hf_export.py, its own float64 forward with the window
// as transformers masks it) evaluates it to `mixgpt eval`'s loss within 1e-6 relative, with
// mixgpt's reference logits and greedy continuation, and its loss moves when the window is taken
// out of config.json; `import` reads it back with the window, bit-identical parameters and
// evaluation, and a folder with sliding_window null as a model without one.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "interop/import.h"
#include "model/checkpoint.h"
#include "tests/test_interop_support.h"
#include "tests/test_support.h"
#include "tests/test_train_support.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

namespace fs = std::filesystem;
using namespace testing_support;
using test::evaluate_on_one_thread;
using test::TempDirectory;

constexpr int kWindow = 5;  // of the tiny runs' context of 16

class InteropMistralTest : public test::ExportedRunTest<InteropMistralTest> {
public:
    static constexpr const char* kName = "mixgpt_interop_mistral";
    static TrainOptions options(const std::string& output_dir) {
        TrainOptions options = tiny_llama_train_options(output_dir);
        options.model.window = kWindow;
        options.steps = 6;
        return options;
    }

protected:
    // A copy of the export whose config.json says sliding_window null (the whole context).
    std::string windowless_copy() const {
        const std::string copy = copy_of_export("windowless");
        nlohmann::ordered_json config = nlohmann::ordered_json::parse(testing::read_file(copy + "/config.json"));
        config["sliding_window"] = nullptr;
        std::ofstream(copy + "/config.json", std::ios::trunc) << config.dump(2) << "\n";
        return copy;
    }
};

TEST_F(InteropMistralTest, FolderHoldsMistralConfigWithTheWindow) {
    const nlohmann::json config = nlohmann::json::parse(testing::read_file(exported() + "/config.json"));
    EXPECT_EQ(config["model_type"], "mistral");
    EXPECT_EQ(config["architectures"][0], "MistralForCausalLM");
    EXPECT_EQ(config["sliding_window"], kWindow);
    for (const char* absent : {"rope_scaling", "pretraining_tp", "attention_bias", "mlp_bias"})
        EXPECT_FALSE(config.contains(absent)) << absent;
    EXPECT_NE(testing::read_file(exported() + "/README.md").find("MistralForCausalLM"), std::string::npos);
}

TEST_F(InteropMistralTest, ExportThenImportGivesTheWindowAndBitIdenticalEval) {
    const GPTConfig round_trip = expect_bit_identical_round_trip();
    EXPECT_EQ(round_trip.attention_window, kWindow);
    EXPECT_EQ(round_trip.window_pattern_text(), "");

    // sliding_window null: the same weights over the whole context, another loss.
    const std::string windowless = scratch_.file("imported_windowless");
    interop::import_hf({windowless_copy(), windowless, false});
    EXPECT_EQ(read_checkpoint(newest_valid_checkpoint(windowless + "/checkpoints")).config.attention_window, 0);
    EXPECT_NE(evaluate_on_one_thread(windowless).totals.nats, evaluate_on_one_thread(run()).totals.nats);
}

TEST_F(InteropMistralTest, IndependentNumpyReaderRecomputesLossLogitsAndGreedyTokens) {
    // The altered copy: no window, which changes the reader's loss.
    if (!test::check_with_numpy_reader(scratch_, run(), exported(), windowless_copy()))
        GTEST_SKIP() << "/usr/bin/python3 with numpy and h5py is not available";
}

}  // namespace
}  // namespace mixgpt
