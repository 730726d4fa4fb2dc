// Bad input, non-finite and message families (issue 31): NaN/Inf weights, working copy, AdamW
// moments or loss scale are refused by import, eval, sample, export and resume in one line naming
// the tensor and the count, unless --allow-nonfinite; damaged counters and shapes are reported as
// what they are; messages name options the command has. Cases are checked as
// tests/bad_inputs_support.h says; the crafted checkpoints are written by write_checkpoint (valid
// checksums), or edited with HDF5 and their header rewritten, so only the damage meant is there.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "cli/commands.h"
#include "cli/out_of_memory.h"
#include "core/dtype.h"
#include "core/h5.h"
#include "interop/safetensors_file.h"
#include "model/checkpoint_header.h"
#include "model/finite_check.h"
#include "model/parameters.h"
#include "tests/bad_inputs_support.h"
#include "train/train_options.h"

namespace mixgpt {
namespace {

using namespace test;
namespace fs = std::filesystem;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Rewrites a checkpoint's header after its HDF5 content was edited: new size and CRC-32.
void reseal_checkpoint(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    CheckpointHeader header = parse_checkpoint_header(bytes.data(), bytes.size(), path);
    header.payload_bytes = bytes.size() - kCheckpointHeaderBytes;
    header.payload_crc32 =
        static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()) + kCheckpointHeaderBytes,
                                    static_cast<uInt>(header.payload_bytes)));
    const std::string block = checkpoint_header_block(header);
    std::fstream(path, std::ios::binary | std::ios::in | std::ios::out).write(block.data(), block.size());
}

class BadNonfiniteTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        fixture_ = make_bad_input_fixture("mixgpt_bad_nonfinite").release();
        const TempDirectory& d = *fixture_;
        const std::string trained = d.file("run/checkpoints/step_00000002.h5");
        const Checkpoint base = read_checkpoint(trained);
        const ParameterLayout layout(base.config);
        const int64_t qkv = layout.find("h.0.attn.c_attn.weight").offset;
        const int64_t wte = layout.find("wte").offset;

        Checkpoint nan_weights = base;
        nan_weights.parameters[static_cast<size_t>(qkv + 5)] = kNaN;
        nan_weights.parameters[static_cast<size_t>(qkv + 7)] = kInf;
        nan_weights.parameters[static_cast<size_t>(qkv + 9)] = -kInf;
        write_checkpoint(d.file("nan_weights.h5"), nan_weights);
        fs::create_directories(d.file("nan_run/checkpoints"));
        fs::copy(d.file("nan_weights.h5"), d.file("nan_run/checkpoints/step_00000002.h5"));

        Checkpoint inf_moments = base;
        inf_moments.adam_v[static_cast<size_t>(wte + 1)] = kInf;
        inf_moments.adam_v[static_cast<size_t>(wte + 2)] = -kInf;
        write_checkpoint(d.file("inf_moments.h5"), inf_moments);

        Checkpoint nan_scale = base;
        nan_scale.status.loss_scale = kNaN;
        write_checkpoint(d.file("nan_scale.h5"), nan_scale);

        Checkpoint nan_working = base;  // a bf16 run's checkpoint with one NaN in its working copy
        nan_working.precision = Precision::bf16;
        nan_working.working_bits.resize(base.parameters.size());
        convert_from_float(base.parameters.data(), nan_working.working_bits.data(), DType::bf16,
                           base.parameters.size());
        nan_working.working_bits[static_cast<size_t>(layout.find("ln_f.weight").offset)] = 0x7fc0;
        write_checkpoint(d.file("nan_working.h5"), nan_working);

        Checkpoint negative_step = base;
        negative_step.step = -5;
        write_checkpoint(d.file("negative_step.h5"), negative_step);

        fs::copy(trained, d.file("damaged_shape.h5"));
        {
            h5::File file = h5::File::open_write(d.file("damaged_shape.h5"));
            file.set_attribute("/", "n_layer", int64_t{48});
            file.close();
        }
        reseal_checkpoint(d.file("damaged_shape.h5"));

        BadInputRunner runner(d);
        ASSERT_EQ(runner.run({"export", "{D}/run", "-o", "{D}/hf_nan"}).exit_status, 0);
        poke_nan(d.file("hf_nan/model.safetensors"), "transformer.h.0.attn.c_attn.weight", 3);
    }
    static void TearDownTestSuite() {
        delete fixture_;
        fixture_ = nullptr;
    }

    // Writes a NaN over element `index` of tensor `name` of a safetensors file (F32).
    static void poke_nan(const std::string& path, const std::string& name, uint64_t index) {
        const interop::SafetensorsFile file = interop::read_safetensors(path);
        const interop::SafetensorsTensor* tensor = file.header.find(name);
        ASSERT_NE(tensor, nullptr) << name;
        ASSERT_EQ(tensor->dtype, "F32");
        std::fstream stream(path, std::ios::binary | std::ios::in | std::ios::out);
        stream.seekp(static_cast<std::streamoff>(8 + file.header.header_bytes + tensor->begin + 4 * index));
        stream.write(reinterpret_cast<const char*>(&kNaN), sizeof(kNaN));
    }

    static inline TempDirectory* fixture_ = nullptr;
    BadInputRunner runner_{*fixture_};
};

std::vector<BadInput> nonfinite_cases() {
    const std::string weights =
        "tensor 'h.0.attn.c_attn.weight' of the FP32 weights has 3 non-finite values (NaN or Inf), 3 in all";
    const std::string allow = "--allow-nonfinite";
    return {
        {"eval: NaN and Inf weights",
         {"eval", "{D}/nan_weights.h5", "--threads", "1"},
         1,
         {"{D}/nan_weights.h5", weights, allow}},
        {"eval: a run directory whose checkpoint has NaN weights",
         {"eval", "{D}/nan_run", "--threads", "1"},
         1,
         {"{D}/nan_run/checkpoints/step_00000002.h5", weights}},
        {"sample: NaN and Inf weights",
         {"sample", "{D}/nan_weights.h5", "--threads", "1"},
         1,
         {weights, allow}},
        {"export: NaN and Inf weights",
         {"export", "{D}/nan_weights.h5", "-o", "{D}/new_hf"},
         1,
         {weights, allow}},
        {"train: --resume FILE with NaN weights",
         train_with({"--resume", "{D}/nan_weights.h5"}),
         1,
         {weights, allow}},
        {"train: --resume a run whose checkpoint has NaN weights",
         train_with({"--resume"}, "{D}/nan_run"),
         1,
         {weights}},
        {"train: --resume Inf AdamW moments",
         train_with({"--resume", "{D}/inf_moments.h5"}),
         1,
         {"tensor 'wte' of the AdamW second moments has 2 non-finite values", allow}},
        {"train: --resume a NaN loss scale",
         train_with({"--resume", "{D}/nan_scale.h5"}),
         1,
         {"{D}/nan_scale.h5: the loss scale is nan", allow}},
        {"eval: NaN in the bf16 working copy",
         {"eval", "{D}/nan_working.h5", "--threads", "1"},
         1,
         {"tensor 'ln_f.weight' of the 16-bit working copy has 1 non-finite value", allow}},
        {"train: --resume NaN in the bf16 working copy",
         train_with({"--resume", "{D}/nan_working.h5", "--precision", "bf16"}),
         1,
         {"16-bit working copy"}},
        {"import: a NaN tensor",
         {"import", "{D}/hf_nan", "-o", "{D}/new_run"},
         1,
         {"{D}/hf_nan/model.safetensors: tensor 'transformer.h.0.attn.c_attn.weight' has 1 non-finite value",
          allow}},
        {"import --force: a NaN tensor",
         {"import", "{D}/hf_nan", "-o", "{D}/corpus", "--force"},
         1,
         {"non-finite", allow}},
        {"eval: a negative step",
         {"eval", "{D}/negative_step.h5", "--threads", "1"},
         1,
         {"{D}/negative_step.h5: attribute 'step' is -5; a count cannot be negative"}},
        {"train: --resume a negative step",
         train_with({"--resume", "{D}/negative_step.h5"}),
         1,
         {"attribute 'step' is -5"}},
        {"eval: a shape attribute that does not match the data",
         {"eval", "{D}/damaged_shape.h5"},
         1,
         {"{D}/damaged_shape.h5: dataset 'parameters' has", "the model shape of its attributes needs"}},
    };
}

TEST_F(BadNonfiniteTest, EveryCaseIsOneLineAndDamagesNothing) {
    const std::vector<BadInput> cases = nonfinite_cases();
    for (const BadInput& bad : cases) {
        const std::string line = runner_.check(bad);
        EXPECT_EQ(line.find("diverged"), std::string::npos) << line;
    }
    EXPECT_EQ(cases.size(), 15u);
}

// --allow-nonfinite is the explicit way through: eval prints nan, import and resume go on.
TEST_F(BadNonfiniteTest, AllowNonfiniteAcceptsWhatIsRefusedOtherwise) {
    TempDirectory scratch("mixgpt_allow_nonfinite");
    const Outcome evaluated =
        runner_.run({"eval", "{D}/nan_weights.h5", "--threads", "1", "--json", "--allow-nonfinite"});
    ASSERT_EQ(evaluated.exit_status, 0) << evaluated.err;
    EXPECT_TRUE(nlohmann::json::parse(evaluated.out)["mean_loss"].is_null()) << evaluated.out;  // NaN
    const Outcome imported =
        runner_.run({"import", "{D}/hf_nan", "-o", scratch.file("imported"), "--allow-nonfinite"});
    ASSERT_EQ(imported.exit_status, 0) << imported.err;
    const Checkpoint with_nan = read_checkpoint(checkpoint_path(scratch.file("imported/checkpoints"), 2));
    EXPECT_EQ(count_nonfinite(with_nan.parameters.data(), static_cast<int64_t>(with_nan.parameters.size())),
              1);
    const Outcome resumed = runner_.run(train_with(
        {"--resume", "{D}/inf_moments.h5", "--steps", "3", "--allow-nonfinite"}, scratch.file("run")));
    EXPECT_EQ(resumed.exit_status, 0) << resumed.err;
}

// A token budget near 2^63 used to overflow (budget + tokens per step - 1) into a negative step
// count: "steps: must be at least 1". Now ceil(budget / 64) = 2^57 steps of 64 tokens.
TEST(BadMessagesTest, HugeTokenBudgetIsPlannedWithoutOverflow) {
    TrainOptions options;
    options.model.preset = "d2";
    options.batch_size = 4;
    options.seq_len = 16;
    options.token_budget = std::numeric_limits<int64_t>::max();
    const TrainPlan plan = plan_training(options, 300, 1);
    EXPECT_EQ(plan.tokens_per_step, 64);
    EXPECT_EQ(plan.total_steps, int64_t{1} << 57);
}

// What main says when a command runs out of memory names only options the command has.
TEST(BadMessagesTest, OutOfMemoryAdviceNamesOptionsTheCommandHas) {
    TempDirectory scratch("mixgpt_out_of_memory_advice");
    const auto advice_after = [&](std::vector<std::string> arguments) {
        CLI::App app("mixgpt");
        app.require_subcommand(1);
        cli::add_train_command(app);
        cli::add_eval_command(app);
        cli::add_sample_command(app);
        cli::add_export_command(app);
        cli::add_import_command(app);
        std::reverse(arguments.begin(), arguments.end());  // CLI11 takes them last first
        EXPECT_THROW(app.parse(arguments), Error);         // the work itself fails: no such checkpoint
        return cli::out_of_memory_advice(app);
    };
    const std::string absent = scratch.file("absent.h5");
    for (const std::vector<std::string>& command :
         {std::vector<std::string>{"export", absent, "-o", scratch.file("hf")},
          {"import", scratch.file("absent"), "-o", scratch.file("run")},
          {"sample", absent}}) {
        const std::string advice = advice_after(command);
        EXPECT_EQ(advice.find("--batch-size"), std::string::npos) << command[0] << ": " << advice;
        EXPECT_NE(advice.find("ulimit -v"), std::string::npos) << command[0] << ": " << advice;
    }
    EXPECT_NE(advice_after({"eval", absent}).find("--batch-size/-b or --seq-len/-t"), std::string::npos);
}

}  // namespace
}  // namespace mixgpt
