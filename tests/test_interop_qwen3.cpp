// Hugging Face interop of the Llama-style family with --qk-norm: `export` writes a Qwen3ForCausalLM
// folder (model_type qwen3: Llama's blocks with each query and key head RMS-normalised before RoPE,
// the q_norm / k_norm weights written as ones); the independent NumPy reader
// (scripts/check_hf_export.py, its own float64 Qwen3 forward) evaluates it to `mixgpt eval`'s loss
// within 1e-6 relative, with mixgpt's reference logits and greedy continuation; `import` reads it
// back with QK-norm on, bit-identical parameters and evaluation; a folder whose q_norm is not all
// ones is refused in one line (mixgpt's QK-norm has no weights), and the reader sees the change.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "eval/run_eval.h"
#include "interop/import.h"
#include "interop/reference_outputs.h"
#include "interop/safetensors_file.h"
#include "model/checkpoint.h"
#include "tests/test_interop_support.h"
#include "tests/test_python_support.h"
#include "tests/test_support.h"
#include "tests/test_tokenizer_support.h"
#include "tests/test_train_support.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

namespace fs = std::filesystem;
using namespace testing_support;
using test::evaluate_on_one_thread;
using test::refused_import_message;
using test::TempDirectory;

class InteropQwen3Test : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        directory_ = new TempDirectory("mixgpt_interop_qwen3");
        TrainOptions options = tiny_llama_train_options(directory_->file("run"));
        options.model.tie_embeddings = "false";
        options.model.qk_norm = true;
        options.model.rope_theta = 500;
        options.steps = 6;
        test::train_and_export(options, directory_->file("hf"));
    }
    static void TearDownTestSuite() {
        delete directory_;
        directory_ = nullptr;
    }
    static std::string run() { return directory_->file("run"); }
    static std::string exported() { return directory_->file("hf"); }

    // A copy of the export whose q_norm weights of layer 1 are all 10 (the layer's scores ten times larger).
    std::string spoiled_copy() const {
        const std::string spoiled = scratch_.file("spoiled");
        fs::copy(exported(), spoiled, fs::copy_options::recursive);
        const interop::SafetensorsFile file = interop::read_safetensors(spoiled + "/model.safetensors");
        const interop::SafetensorsTensor& norm = *file.header.find("model.layers.1.self_attn.q_norm.weight");
        std::string bytes = testing::read_file(spoiled + "/model.safetensors");
        uint64_t header_length = 0;  // little-endian, as on every host the tests run on
        std::memcpy(&header_length, bytes.data(), sizeof header_length);
        const float value = 10.f;
        for (int i = 0; i < 16; ++i)
            std::memcpy(bytes.data() + 8 + header_length + norm.begin + 4 * i, &value, sizeof value);
        std::ofstream(spoiled + "/model.safetensors", std::ios::binary | std::ios::trunc) << bytes;
        return spoiled;
    }

    static TempDirectory* directory_;
    TempDirectory scratch_{"mixgpt_interop_qwen3_case"};
};

TempDirectory* InteropQwen3Test::directory_ = nullptr;

TEST_F(InteropQwen3Test, FolderHoldsQwen3ConfigAndNormsOfOnes) {
    const nlohmann::json config = nlohmann::json::parse(testing::read_file(exported() + "/config.json"));
    EXPECT_EQ(config["model_type"], "qwen3");
    EXPECT_EQ(config["architectures"][0], "Qwen3ForCausalLM");
    EXPECT_EQ(config["head_dim"], 16);
    EXPECT_EQ(config["use_sliding_window"], false);
    EXPECT_FALSE(config.contains("pretraining_tp"));
    const interop::SafetensorsFile file = interop::read_safetensors(exported() + "/model.safetensors");
    for (int layer = 0; layer < 2; ++layer)
        for (const char* norm : {"q_norm", "k_norm"}) {
            const std::string name = "model.layers." + std::to_string(layer) + ".self_attn." + norm + ".weight";
            const interop::SafetensorsTensor* tensor = file.header.find(name);
            ASSERT_NE(tensor, nullptr) << name;
            EXPECT_EQ(tensor->shape, (std::vector<int64_t>{16})) << name;
            EXPECT_EQ(tensor->dtype, "F32") << name;
            const std::string bytes = testing::read_file(exported() + "/model.safetensors");
            uint64_t header_length = 0;
            std::memcpy(&header_length, bytes.data(), sizeof header_length);
            for (int i = 0; i < 16; ++i) {
                float value = 0;
                std::memcpy(&value, bytes.data() + 8 + header_length + tensor->begin + 4 * i, sizeof value);
                EXPECT_EQ(value, 1.f) << name << "[" << i << "]";
            }
        }
}

TEST_F(InteropQwen3Test, ExportThenImportGivesQkNormAndBitIdenticalEval) {
    const std::string imported = scratch_.file("imported");
    interop::import_hf({exported(), imported, false});
    const Checkpoint original = read_checkpoint(newest_valid_checkpoint(run() + "/checkpoints"));
    const Checkpoint round_trip = read_checkpoint(newest_valid_checkpoint(imported + "/checkpoints"));
    EXPECT_TRUE(round_trip.config.qk_norm);
    EXPECT_EQ(round_trip.config.rope_theta, 500.f);
    ASSERT_EQ(original.parameters.size(), round_trip.parameters.size());
    EXPECT_EQ(std::memcmp(original.parameters.data(), round_trip.parameters.data(),
                          original.parameters.size() * sizeof(float)),
              0);
    const EvalReport before = evaluate_on_one_thread(run()), after = evaluate_on_one_thread(imported);
    EXPECT_GT(before.totals.tokens, 0);
    EXPECT_EQ(after.totals.nats, before.totals.nats);  // exactly

    const std::string spoiled = spoiled_copy();
    const std::string message = refused_import_message(scratch_, spoiled);
    EXPECT_NE(message.find("model.layers.1.self_attn.q_norm.weight is not all 1: mixgpt's QK-norm has no weights"),
              std::string::npos)
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST_F(InteropQwen3Test, IndependentNumpyReaderRecomputesLossLogitsAndGreedyTokens) {
    if (test::run_python({"-c", "import numpy, h5py"}, scratch_.file("probe.txt")) != 0)
        GTEST_SKIP() << "/usr/bin/python3 with numpy and h5py is not available";
    const std::string checker = test::find_checker();
    ASSERT_FALSE(checker.empty()) << "scripts/check_hf_export.py not found above the test binary";
    const std::string eval_json = scratch_.write("eval.json", eval_report_json(evaluate_on_one_thread(run())));
    interop::ReferenceOptions reference;
    reference.source = run();
    reference.output = scratch_.file("reference");
    reference.logits_tokens = 20;
    reference.prompt = "the cat";
    reference.new_tokens = 6;
    reference.threads = 1;
    interop::write_reference_outputs(reference);
    const std::string output = scratch_.file("check.txt");
    EXPECT_EQ(test::run_python({checker, exported(), "--dataset", tiny_dataset().dataset_path, "--eval-json", eval_json,
                                "--tolerance", "1e-6", "--reference", reference.output},
                               output),
              0)
        << testing::read_file(output);
    EXPECT_NE(testing::read_file(output).find(" tokens, identical"), std::string::npos) << testing::read_file(output);
    // The reader applies q_norm: weights of 10 change its loss.
    EXPECT_EQ(test::run_python({checker, spoiled_copy(), "--dataset", tiny_dataset().dataset_path, "--eval-json",
                                eval_json},
                               scratch_.file("spoiled.txt")),
              1)
        << testing::read_file(scratch_.file("spoiled.txt"));
}

}  // namespace
}  // namespace mixgpt
