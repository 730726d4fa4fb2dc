// Training with the recipe's model options (issue 38: --mlp relu2, --norm-weights false,
// --zero-init proj,head, --qk-norm, ...): a run with any one option trains, and export refuses its
// checkpoint in one line naming the option (no Hugging Face class mixgpt writes computes it).
// Resume under --recipe nanochat: test_train_resume_options.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "interop/export.h"
#include "tests/test_support.h"
#include "tests/test_train_support.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

using namespace testing_support;
using test::error_of;
using test::TempDirectory;

struct ExportCase {
    const char* name;
    std::function<void(ModelOptions&)> apply;
    const char* message;  // what export's one line says, after the checkpoint's path
};

void PrintTo(const ExportCase& c, std::ostream* out) { *out << c.name; }

class TrainRecipeExportTest : public ::testing::TestWithParam<ExportCase> {};

TEST_P(TrainRecipeExportTest, ExportRefusesTheOptionNamingIt) {
    TempDirectory directory(std::string("mixgpt_recipe_export_") + GetParam().name);
    TrainOptions options = tiny_llama_train_options(directory.file("run"));
    GetParam().apply(options.model);
    options.steps = 1;
    options.warmup_steps = 0;
    run_training(options);
    interop::ExportOptions exporting;
    exporting.source = options.output_dir;
    exporting.output = directory.file("hf");
    const std::string message = error_of([&] { interop::export_hf(exporting); });
    EXPECT_NE(message.find(GetParam().message), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_FALSE(std::filesystem::exists(exporting.output));
}

INSTANTIATE_TEST_SUITE_P(
    Options, TrainRecipeExportTest,
    ::testing::Values(
        ExportCase{"relu2", [](ModelOptions& model) { model.mlp = "relu2"; },
                   ": --mlp relu2: the Hugging Face class mixgpt exports for --arch llama has a "
                   "swiglu MLP: export refuses"},
        ExportCase{"no_norm_weights", [](ModelOptions& model) { model.norm_weights = "false"; },
                   ": --norm-weights false: the checkpoint has no norm weights, "
                   "and export writes only the tensors it has: export refuses"},
        ExportCase{"embedding_norm", [](ModelOptions& model) { model.embedding_norm = true; },
                   ": --embedding-norm: neither GPT2LMHeadModel nor "
                   "LlamaForCausalLM normalises the embeddings: export refuses"},
        // Under llama, QK-norm exports as Qwen3ForCausalLM (tests/test_interop_qwen3.cpp).
        ExportCase{"gpt2_qk_norm",
                   [](ModelOptions& model) {
                       model.arch = "gpt2";
                       model.n_kv_head = 0;
                       model.tie_embeddings.clear();
                       model.qk_norm = true;
                   },
                   ": --qk-norm: GPT2LMHeadModel does not normalise queries and keys (Qwen3ForCausalLM, which does, "
                   "has Llama's blocks): export refuses"},
        // Issue 39's sliding window: on every layer it exports as MistralForCausalLM
        // (tests/test_interop_mistral.cpp); a per-layer pattern, or a window with QK-norm, has no class.
        ExportCase{"window_pattern",
                   [](ModelOptions& model) {
                       model.window = 4;
                       model.window_pattern = "SL";
                   },
                   ": --window-pattern SL: MistralForCausalLM windows every layer alike, and no exported class "
                   "mixes windowed and whole-context layers: export refuses"},
        ExportCase{"window_qk_norm",
                   [](ModelOptions& model) {
                       model.window = 4;
                       model.qk_norm = true;
                   },
                   ": --window 4: Qwen3ForCausalLM has no sliding window (MistralForCausalLM, which has, has "
                   "Llama's blocks without QK-norm): export refuses"}),
    [](const ::testing::TestParamInfo<ExportCase>& info) { return std::string(info.param.name); });

// --zero-init changes how training starts, not the model: its run exports (the function is one a
// Hugging Face class computes), and training moves the zeroed tensors off zero.
TEST(TrainZeroInitTest, ZeroedTensorsTrainAndTheRunExports) {
    TempDirectory directory("mixgpt_recipe_zero_init");
    TrainOptions options = tiny_llama_train_options(directory.file("run"));
    options.model.zero_init = "proj,head";
    options.steps = 2;
    const TrainResult result = run_training(options);
    const Checkpoint trained = read_checkpoint(result.last_checkpoint);
    const ParameterLayout layout(trained.config);
    for (const ParameterView& view : layout.views())
        if (view.role == Role::attention_output_weight || view.role == Role::mlp_output_weight ||
            view.role == Role::output_head) {
            const auto begin = trained.parameters.begin() + view.offset;
            EXPECT_TRUE(std::any_of(begin, begin + view.numel, [](float v) { return v != 0.f; }))
                << view.name;
        }
    interop::ExportOptions exporting;
    exporting.source = options.output_dir;
    exporting.output = directory.file("hf");
    EXPECT_NO_THROW(interop::export_hf(exporting));
    EXPECT_TRUE(std::filesystem::exists(exporting.output + "/model.safetensors"));
}

}  // namespace
}  // namespace mixgpt
