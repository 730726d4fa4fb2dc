// Hugging Face interop of the Llama-style family: `export` of a tiny trained llama run (grouped-
// query attention, untied head; and a tied one) writes a LlamaForCausalLM folder that the
// independent NumPy reader (scripts/check_hf_export.py: its own safetensors parser and float64
// Llama forward with transformers' rotate-half RoPE) evaluates to `mixgpt eval`'s loss within
// 1e-6 relative, with mixgpt's reference logits and an identical greedy continuation; `import`
// of it gives the same parameters bit for bit and the same evaluation; unmodelled features
// (rope_scaling, another activation, biases) are refused with one line.
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
using test::error_of;
using test::evaluate_on_one_thread;
using test::refused_import_message;
using test::TempDirectory;

// Two tiny trained llama runs and their exports, made once: untied (the head its own lm_head.weight)
// and tied (no lm_head.weight in the folder).
class InteropLlamaTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        directory_ = new TempDirectory("mixgpt_interop_llama");
        for (const char* tie : {"false", "true"}) {
            TrainOptions options = tiny_llama_train_options(directory_->file(std::string("run_tied_") + tie));
            options.model.tie_embeddings = tie;
            options.model.rope_theta = 500;  // far from the default, so a lost setting shows
            options.steps = 6;
            test::train_and_export(options, directory_->file(std::string("hf_tied_") + tie));
        }
    }
    static void TearDownTestSuite() {
        delete directory_;
        directory_ = nullptr;
    }
    static std::string run(bool tied) { return directory_->file(tied ? "run_tied_true" : "run_tied_false"); }
    static std::string exported(bool tied) { return directory_->file(tied ? "hf_tied_true" : "hf_tied_false"); }

    EvalReport evaluate(const std::string& checkpoint) const { return evaluate_on_one_thread(checkpoint); }
    std::string import_error(const std::string& folder) const { return refused_import_message(scratch_, folder); }

    static TempDirectory* directory_;
    TempDirectory scratch_{"mixgpt_interop_llama_case"};
};

TempDirectory* InteropLlamaTest::directory_ = nullptr;

TEST_F(InteropLlamaTest, FolderHoldsLlamaConfigAndTensors) {
    const nlohmann::json config = nlohmann::json::parse(testing::read_file(exported(false) + "/config.json"));
    EXPECT_EQ(config["model_type"], "llama");
    EXPECT_EQ(config["architectures"][0], "LlamaForCausalLM");
    EXPECT_EQ(config["hidden_size"], 32);
    EXPECT_EQ(config["intermediate_size"], 128);  // 8/3 * 32 = 85, rounded up to 64's multiple
    EXPECT_EQ(config["num_attention_heads"], 2);
    EXPECT_EQ(config["num_key_value_heads"], 1);
    EXPECT_EQ(config["num_hidden_layers"], 2);
    EXPECT_EQ(config["max_position_embeddings"], 16);
    EXPECT_EQ(config["rope_theta"], 500.0);
    EXPECT_NEAR(config["rms_norm_eps"].get<double>(), 1e-5, 1e-12);
    EXPECT_EQ(config["tie_word_embeddings"], false);
    EXPECT_TRUE(config["rope_scaling"].is_null());
    const interop::SafetensorsFile untied = interop::read_safetensors(exported(false) + "/model.safetensors");
    const interop::SafetensorsTensor* k = untied.header.find("model.layers.1.self_attn.k_proj.weight");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->shape, (std::vector<int64_t>{16, 32}));  // one key/value head of 16
    EXPECT_NE(untied.header.find("model.layers.0.mlp.gate_proj.weight"), nullptr);
    EXPECT_NE(untied.header.find("lm_head.weight"), nullptr);
    const interop::SafetensorsFile tied = interop::read_safetensors(exported(true) + "/model.safetensors");
    EXPECT_EQ(tied.header.find("lm_head.weight"), nullptr);
    EXPECT_EQ(tied.header.tensors.size() + 1, untied.header.tensors.size());
}

TEST_F(InteropLlamaTest, ExportThenImportGivesBitIdenticalParametersAndEval) {
    for (bool tied : {false, true}) {
        SCOPED_TRACE(tied ? "tied" : "untied");
        const std::string imported = scratch_.file(tied ? "imported_tied" : "imported_untied");
        interop::import_hf({exported(tied), imported, false});
        const Checkpoint original = read_checkpoint(newest_valid_checkpoint(run(tied) + "/checkpoints"));
        const Checkpoint round_trip = read_checkpoint(newest_valid_checkpoint(imported + "/checkpoints"));
        EXPECT_EQ(round_trip.config.arch, Arch::llama);
        EXPECT_EQ(round_trip.config.kv_heads(), 1);
        EXPECT_EQ(round_trip.config.mlp_hidden(), original.config.mlp_hidden());
        EXPECT_EQ(round_trip.config.rope_theta, 500.f);
        EXPECT_EQ(round_trip.config.tie_embeddings, tied);
        ASSERT_EQ(original.parameters.size(), round_trip.parameters.size());
        EXPECT_EQ(std::memcmp(original.parameters.data(), round_trip.parameters.data(),
                              original.parameters.size() * sizeof(float)),
                  0);
        const EvalReport before = evaluate(run(tied));
        const EvalReport after = evaluate(imported);
        EXPECT_GT(before.totals.tokens, 0);
        EXPECT_EQ(after.totals.tokens, before.totals.tokens);
        EXPECT_EQ(after.totals.nats, before.totals.nats);  // exactly
    }
}

TEST_F(InteropLlamaTest, IndependentNumpyReaderRecomputesLossLogitsAndGreedyTokens) {
    if (test::run_python({"-c", "import numpy, h5py"}, scratch_.file("probe.txt")) != 0)
        GTEST_SKIP() << "/usr/bin/python3 with numpy and h5py is not available";
    const std::string checker = test::find_checker();
    ASSERT_FALSE(checker.empty()) << "scripts/check_hf_export.py not found above the test binary";
    for (bool tied : {false, true}) {
        SCOPED_TRACE(tied ? "tied" : "untied");
        const std::string name = tied ? "tied" : "untied";
        const std::string eval_json = scratch_.write("eval_" + name + ".json", eval_report_json(evaluate(run(tied))));
        interop::ReferenceOptions reference;
        reference.source = run(tied);
        reference.output = scratch_.file("reference_" + name);
        reference.logits_tokens = 20;
        reference.prompt = "the cat";
        reference.new_tokens = 6;
        reference.threads = 1;
        interop::write_reference_outputs(reference);
        const std::string output = scratch_.file("check_" + name + ".txt");
        EXPECT_EQ(test::run_python({checker, exported(tied), "--dataset", tiny_dataset().dataset_path, "--eval-json",
                                    eval_json, "--tolerance", "1e-6", "--reference", reference.output},
                                   output),
                  0)
            << testing::read_file(output);
        EXPECT_NE(testing::read_file(output).find(" tokens, identical"),
                  std::string::npos)
            << testing::read_file(output);
    }

    // The final norm's first weight doubled: the reader must notice.
    const std::string spoiled = scratch_.file("spoiled");
    fs::copy(exported(false), spoiled, fs::copy_options::recursive);
    const interop::SafetensorsFile file = interop::read_safetensors(spoiled + "/model.safetensors");
    const interop::SafetensorsTensor& norm = *file.header.find("model.norm.weight");
    std::string bytes = testing::read_file(spoiled + "/model.safetensors");
    uint64_t header_length = 0;  // little-endian, as on every host the tests run on
    std::memcpy(&header_length, bytes.data(), sizeof header_length);
    const size_t at = static_cast<size_t>(8 + header_length + norm.begin);
    float value = 0;
    std::memcpy(&value, bytes.data() + at, sizeof value);
    value *= 2;
    std::memcpy(bytes.data() + at, &value, sizeof value);
    std::ofstream(spoiled + "/model.safetensors", std::ios::binary | std::ios::trunc) << bytes;
    const std::string eval_json = scratch_.write("eval_spoiled.json", eval_report_json(evaluate(run(false))));
    EXPECT_EQ(test::run_python({checker, spoiled, "--dataset", tiny_dataset().dataset_path, "--eval-json", eval_json},
                               scratch_.file("spoiled.txt")),
              1)
        << testing::read_file(scratch_.file("spoiled.txt"));
}

void replace_in_config(const std::string& folder, const std::string& from, const std::string& to) {
    const std::string path = folder + "/config.json";
    std::string text = testing::read_file(path);
    const size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

TEST_F(InteropLlamaTest, UnmodelledFeaturesAreRefusedWithOneLine) {
    const struct {
        const char* name;
        const char* from;
        const char* to;
        const char* expected;
    } cases[] = {
        {"rope_scaling", "\"rope_scaling\": null", R"("rope_scaling": {"type": "linear", "factor": 2.0})",
         "rope_scaling: {\"type\":\"linear\",\"factor\":2.0} is not supported (mixgpt's RoPE has no scaling)"},
        {"gelu", "\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"", "hidden_act: \"gelu\" is not supported"},
        {"bias", "\"attention_bias\": false", "\"attention_bias\": true", "attention_bias: true is not supported"},
        {"kv_heads", "\"num_key_value_heads\": 1", "\"num_key_value_heads\": 3",
         "(heads must divide hidden_size, key/value heads the heads)"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        const std::string folder = scratch_.file(c.name);
        fs::copy(exported(false), folder, fs::copy_options::recursive);
        replace_in_config(folder, c.from, c.to);
        const std::string message = import_error(folder);
        EXPECT_NE(message.find(c.expected), std::string::npos) << message;
        EXPECT_EQ(message.rfind(folder + "/config.json: ", 0), 0u) << message;
    }
}

}  // namespace
}  // namespace mixgpt
