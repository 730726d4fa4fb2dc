// Multiple-choice scoring (eval/multiple_choice_scoring.h) on the CUDA backend, each precision,
// against the float64 GPT (tests/reference_f64_gpt.h) on the same rows: six short examples (one
// with an empty context, one longer than the window, one with two identical choices) packed into
// batches of 8 rows of different lengths. Criteria (GUIDE.md 2.7): in fp32 every summed loss
// within 1e-6 relative of float64, as on the CPU (tests/test_multiple_choice_reference.cpp, which
// also checks the rows and the answers); in tf32, bf16 and fp16 the relative norm error at most
// twice the CPU backend's in the same precision. Short rows: the simulator is slow.
#include <gtest/gtest.h>

#include "core/log.h"
#include "eval/multiple_choice_scoring.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/reference_f64_gpt.h"
#include "tests/test_model_support.h"
#include "tests/test_tokenizer_support.h"

namespace mixgpt {
namespace {

constexpr int kWindow = 24, kRows = 8;

ChoiceTask short_task(const Tokenizer& tokenizer) {
    const std::vector<ChoiceExample> examples = {
        {"1", "And God said", {"Let there be light", "and", "the cat sees the red ball", "unto Moses"}, 0},
        {"2", "", {"In the beginning", "the", "In the beginning", "amen"}, 3},
        {"3",
         "In the beginning God created the heaven and the earth. And the earth was without form, and void",
         {"and darkness was upon the face of the deep.", "and", "yes", "the bird keeps the river"},
         0},
        {"4", "the", {"cat", "dog", "old man", "bird"}, 2},
        {"5", "Let there be light: and", {"there was light.", "no", "the moon", "an apple"}, 0},
        {"6", "And it was so.", {"And God saw", "the river", "my sister finds an apple", "x"}, 1},
    };
    ChoiceTask task;
    task.window = kWindow;
    for (size_t e = 0; e < examples.size(); ++e)
        task.examples.push_back(encode_choice_example(examples[e], TaskFormat::mc,
                                                      static_cast<int64_t>(e + 1), tokenizer, kWindow));
    return task;
}

GPTConfig task_config(int vocab_size) {
    GPTConfig config = test::tiny_config();
    config.vocab_size = vocab_size;
    config.max_seq_len = kWindow;
    return config;
}

std::vector<double> all_sums(const std::vector<ExampleScore>& scores) {
    std::vector<double> sums;
    for (const ExampleScore& score : scores) sums.insert(sums.end(), score.sums.begin(), score.sums.end());
    return sums;
}

std::vector<double> scored_on(const std::string& device, Precision precision, const GPTConfig& config,
                              const std::vector<float>& parameters, const ChoiceTask& task) {
    const std::unique_ptr<Backend> backend = make_backend({device, 0, precision, 1});
    GPT model(*backend, config, kRows, kWindow, Recompute::none);
    model.load_master_parameters(parameters.data(), static_cast<int64_t>(parameters.size()));
    return all_sums(score_choice_task(model, task, 0, 1));
}

class GpuMultipleChoice : public ::testing::TestWithParam<Precision> {
protected:
    void SetUp() override { MIXGPT_GPU_OR_SKIP(); }
};

TEST_P(GpuMultipleChoice, ScoresMatchFloat64AsWellAsTheCpu) {
    const Tokenizer& tokenizer = testing::tiny_tokenizer();
    const ChoiceTask task = short_task(tokenizer);
    ASSERT_GT(task.examples[2].context_cut, 0);
    const GPTConfig config = task_config(tokenizer.vocab_size());
    const std::vector<float> parameters = test::spread_parameters(ParameterLayout(config), 29);

    const F64Gpt reference(config, parameters);
    std::vector<double> expected;
    for (const EncodedExample& example : task.examples)
        for (size_t c = 0; c < example.choices.size(); ++c) {
            const ChoiceRow row = choice_row(example, static_cast<int>(c), task.window);
            const F64Vector losses = reference.losses({row.tokens.begin(), row.tokens.end() - 1},
                                                      {row.tokens.begin() + 1, row.tokens.end()});
            double sum = 0;
            for (size_t p = static_cast<size_t>(row.first_scored); p < losses.size(); ++p) sum += losses[p];
            expected.push_back(sum);
        }

    const Precision precision = GetParam();
    const std::vector<double> gpu = scored_on("cuda", precision, config, parameters, task);
    ASSERT_EQ(gpu.size(), expected.size());
    if (precision == Precision::fp32) {
        for (size_t i = 0; i < gpu.size(); ++i)
            EXPECT_LE(std::abs(gpu[i] - expected[i]), 1e-6 * std::abs(expected[i]))
                << "row " << i << ": " << gpu[i] << " vs float64 " << expected[i];
    } else {
        const std::vector<double> cpu = scored_on("cpu", precision, config, parameters, task);
        const double gpu_error = relative_norm_error(gpu, expected);
        const double cpu_error = relative_norm_error(cpu, expected);
        gpu_test::record_error_ratio("summed losses", gpu_error, cpu_error, 2 * cpu_error);
        EXPECT_LE(gpu_error, 2 * cpu_error) << "gpu " << gpu_error << ", cpu " << cpu_error;
        RecordProperty("relative_norm_error", format("gpu %.3g, cpu %.3g", gpu_error, cpu_error));
    }
}

INSTANTIATE_TEST_SUITE_P(GpuPrecisions, GpuMultipleChoice,
                         ::testing::Values(Precision::fp32, Precision::tf32, Precision::bf16,
                                           Precision::fp16),
                         [](const ::testing::TestParamInfo<Precision>& info) {
                             return std::string(precision_name(info.param));
                         });

}  // namespace
}  // namespace mixgpt
