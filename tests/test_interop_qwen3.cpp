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
#include "interop/safetensors_file.h"
#include "model/checkpoint.h"
#include "tests/test_interop_support.h"
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

class InteropQwen3Test : public test::ExportedRunTest<InteropQwen3Test> {
public:
    static constexpr const char* kName = "mixgpt_interop_qwen3";
    static TrainOptions options(const std::string& output_dir) {
        TrainOptions options = tiny_llama_train_options(output_dir);
        options.model.tie_embeddings = "false";
        options.model.qk_norm = true;
        options.model.rope_theta = 500;
        options.steps = 6;
        return options;
    }

protected:

    // A copy of the export whose q_norm weights of layer 1 are all 10 (the layer's scores ten times larger).
    std::string spoiled_copy() const {
        const std::string spoiled = copy_of_export("spoiled");
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
};

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
    const GPTConfig round_trip = expect_bit_identical_round_trip();
    EXPECT_TRUE(round_trip.qk_norm);
    EXPECT_EQ(round_trip.rope_theta, 500.f);

    const std::string spoiled = spoiled_copy();
    const std::string message = refused_import_message(scratch_, spoiled);
    EXPECT_NE(message.find("model.layers.1.self_attn.q_norm.weight is not all 1: mixgpt's QK-norm has no weights"),
              std::string::npos)
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST_F(InteropQwen3Test, IndependentNumpyReaderRecomputesLossLogitsAndGreedyTokens) {
    // The altered copy: q_norm weights of 10, which change the reader's loss.
    if (!test::check_with_numpy_reader(scratch_, run(), exported(), spoiled_copy()))
        GTEST_SKIP() << "/usr/bin/python3 with numpy and h5py is not available";
}

}  // namespace
}  // namespace mixgpt
