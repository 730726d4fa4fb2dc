// Hugging Face interop: the safetensors header parser against malformed input, export then import
// of a trained run (bit-identical FP32 parameters, identical `mixgpt eval`, train --resume),
// malformed folders refused with one line, and the independent NumPy reader
// (scripts/check_hf_export.py) recomputing the exported model's loss and mixgpt's reference outputs.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "eval/run_eval.h"
#include "interop/export.h"
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
using test::find_checker;
using test::run_python;
using test::TempDirectory;

std::string little_endian_u64(uint64_t value) {
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>(value >> (8 * i));
    return bytes;
}

// A safetensors file: the length, `header`, then `data_bytes` bytes of data.
std::string safetensors_bytes(const std::string& header, size_t data_bytes) {
    return little_endian_u64(header.size()) + header + std::string(data_bytes, '\x01');
}

std::string parse_error(const std::string& file) {
    return error_of([&] {
        const uint64_t length = interop::read_header_length(
            reinterpret_cast<const unsigned char*>(file.data()), file.size(), file.size(), "x.safetensors");
        interop::parse_safetensors_header(std::string_view(file).substr(8, length), file.size(),
                                          "x.safetensors");
    });
}

TEST(SafetensorsHeaderTest, ParsesTensorsAndMetadataInOffsetOrder) {
    const std::string file = safetensors_bytes(
        R"({"__metadata__":{"format":"pt"},"b":{"dtype":"BF16","shape":[3],"data_offsets":[8,14]},)"
        R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"s":{"dtype":"F32","shape":[],"data_offsets":[14,18]}})",
        18);
    const interop::SafetensorsHeader header = interop::parse_safetensors_header(
        std::string_view(file).substr(8, file.size() - 8 - 18), file.size(), "x.safetensors");
    ASSERT_EQ(header.tensors.size(), 3u);
    EXPECT_EQ(header.tensors[0].name, "a");
    EXPECT_EQ(header.tensors[1].name, "b");
    EXPECT_EQ(header.tensors[1].dtype, "BF16");
    EXPECT_EQ(header.tensors[1].shape, std::vector<int64_t>{3});
    EXPECT_TRUE(header.tensors[2].shape.empty());
    EXPECT_EQ(header.metadata.at("format"), "pt");
}

TEST(SafetensorsHeaderTest, RefusesMalformedHeadersWithOneLine) {
    const std::string tensor_a = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
    const struct {
        std::string file, expected;
    } cases[] = {
        {std::string("\x05\x00\x00", 3), "truncated safetensors file (3 bytes"},
        {little_endian_u64(1000) + "{}", "header length 1000 is past the end of the file (10 bytes)"},
        {little_endian_u64(0), "header length is 0"},
        {safetensors_bytes("[1, 2]", 0), "does not start with '{'"},
        {safetensors_bytes("{\"a\":", 0), "is not valid JSON"},
        {safetensors_bytes("{" + tensor_a + "}", 4), "past the data area of 4 bytes (truncated file?)"},
        {safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                           8),
         "tensors 'a' and 'b' overlap in the data area"},
        {safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
         "bytes 0 to 4 of the data area belong to no tensor"},
        {safetensors_bytes("{" + tensor_a + "}", 12), "the data area has 12 bytes, the tensors cover 8"},
        {safetensors_bytes(R"({"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", 8),
         "unknown dtype 'Q4'"},
        {safetensors_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
         "holds 8 bytes, its dtype and shape need 12"},
        {safetensors_bytes(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
         "shape entry is not a non-negative integer"},
        {safetensors_bytes(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
                           8),
         "byte size overflows"},
        {safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8),
         "data_offsets begin is after end"},
        {safetensors_bytes("{" + tensor_a + "," + tensor_a + "}", 8), "tensor 'a' appears twice"},
        {safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2]}})", 8), "has no 'data_offsets'"},
        {safetensors_bytes(R"({"__metadata__":{"n":1}})", 0), "__metadata__ value 'n' is not a string"},
    };
    for (const auto& [file, expected] : cases) {
        const std::string message = parse_error(file);
        EXPECT_NE(message.find(expected), std::string::npos)
            << "expected '" << expected << "', got '" << message << "'";
        EXPECT_EQ(message.rfind("x.safetensors: ", 0), 0u) << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
}

// A tiny trained run and its export, made once for the tests below.
class InteropTest : public test::ExportedRunTest<InteropTest> {
public:
    static constexpr const char* kName = "mixgpt_interop_test";
    static TrainOptions options(const std::string& output_dir) {
        TrainOptions options = tiny_train_options(output_dir);
        options.steps = 6;
        return options;
    }

protected:
    std::string import_error(const std::string& folder) const { return refused_import_message(scratch_, folder); }
    EvalReport evaluate(const std::string& checkpoint) const { return evaluate_on_one_thread(checkpoint); }
};

TEST_F(InteropTest, ExportThenImportGivesBitIdenticalParametersAndEval) {
    const std::string imported = scratch_.file("imported");
    interop::import_hf({exported(), imported, false});
    const Checkpoint original = read_checkpoint(newest_valid_checkpoint(run() + "/checkpoints"));
    const Checkpoint round_trip = read_checkpoint(newest_valid_checkpoint(imported + "/checkpoints"));
    ASSERT_EQ(original.config.padded_vocab_size(), round_trip.config.padded_vocab_size());
    ASSERT_GT(original.config.padded_vocab_size(), original.config.vocab_size)
        << "no padding rows to restore";
    ASSERT_EQ(original.parameters.size(), round_trip.parameters.size());
    EXPECT_EQ(std::memcmp(original.parameters.data(), round_trip.parameters.data(),
                          original.parameters.size() * sizeof(float)),
              0);
    EXPECT_EQ(round_trip.step, original.step);
    EXPECT_EQ(round_trip.tokens_seen, original.tokens_seen);
    EXPECT_EQ(round_trip.tokenizer_sha256, original.tokenizer_sha256);

    const EvalReport before = evaluate(run());
    const EvalReport after = evaluate(imported);
    EXPECT_GT(before.totals.tokens, 0);
    EXPECT_EQ(after.totals.tokens, before.totals.tokens);
    EXPECT_EQ(after.totals.nats, before.totals.nats);  // exactly
}

TEST_F(InteropTest, ImportedRunResumesTraining) {
    const std::string imported = scratch_.file("imported");
    interop::import_hf({exported(), imported, false});
    TrainOptions options = tiny_train_options(imported);
    options.steps = 8;
    options.resume = "auto";
    const TrainResult result = run_training(options);
    EXPECT_EQ(fs::path(result.last_checkpoint).filename(), "step_00000008.h5");
}

TEST_F(InteropTest, Bf16ExportRoundsTheMasterWeights) {
    interop::ExportOptions options;
    options.source = run();
    options.output = scratch_.file("hf_bf16");
    options.dtype = "bf16";
    interop::export_hf(options);
    const interop::SafetensorsFile file = interop::read_safetensors(options.output + "/model.safetensors");
    const interop::SafetensorsTensor* bias = file.header.find("transformer.h.1.mlp.c_fc.bias");
    ASSERT_NE(bias, nullptr);
    EXPECT_EQ(bias->dtype, "BF16");
    const Checkpoint original = read_checkpoint(newest_valid_checkpoint(run() + "/checkpoints"));
    const ParameterLayout layout(original.config);  // find() returns a reference into the layout
    const ParameterView& view = layout.find("h.1.mlp.c_fc.bias");
    for (int64_t i = 0; i < view.numel; ++i) {
        uint16_t bits = 0;
        std::memcpy(&bits, file.bytes_of(*bias) + 2 * i, 2);
        EXPECT_EQ(bits, float_to_bf16_bits(original.parameters[static_cast<size_t>(view.offset + i)])) << i;
    }
}

TEST_F(InteropTest, ExportRefusesAnOccupiedFolderAndABadDtype) {
    interop::ExportOptions options;
    options.source = run();
    options.output = exported();
    EXPECT_NE(
        error_of([&] { interop::export_hf(options); }).find("exists and is not empty (--force replaces it)"),
        std::string::npos);
    options.output = scratch_.file("hf_int8");
    options.dtype = "int8";
    EXPECT_EQ(error_of([&] { interop::export_hf(options); }), "dtype: 'int8' is not one of fp32, bf16, fp16");
    EXPECT_FALSE(fs::exists(options.output));
}

void rewrite(const std::string& path, const std::function<void(std::string&)>& change) {
    std::string bytes = testing::read_file(path);
    change(bytes);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Replaces `from` (which must occur) by `to`, of the same length, in the file's header.
void edit_header(const std::string& path, const std::string& from, const std::string& to) {
    ASSERT_EQ(from.size(), to.size());
    rewrite(path, [&](std::string& bytes) {
        const size_t at = bytes.find(from);
        ASSERT_NE(at, std::string::npos) << from;
        bytes.replace(at, from.size(), to);
    });
}

TEST_F(InteropTest, MalformedFoldersAreRefusedWithOneLine) {
    const std::string truncated = copy_of_export("truncated");
    rewrite(truncated + "/model.safetensors", [](std::string& bytes) { bytes.resize(bytes.size() - 100); });
    EXPECT_NE(import_error(truncated).find("is past the data area"), std::string::npos);

    const std::string past_end = copy_of_export("past_end");
    rewrite(past_end + "/model.safetensors",
            [](std::string& bytes) { bytes.replace(0, 8, little_endian_u64(1u << 20)); });
    EXPECT_NE(import_error(past_end).find("header length 1048576 is past the end of the file"),
              std::string::npos);

    // wpe's data_offsets moved back by 4 bytes onto wte's last element: an overlap.
    const std::string overlap = copy_of_export("overlap");
    const interop::SafetensorsFile good = interop::read_safetensors(exported() + "/model.safetensors");
    const interop::SafetensorsTensor& wpe = *good.header.find("transformer.wpe.weight");
    const std::string offsets = "[" + std::to_string(wpe.begin) + "," + std::to_string(wpe.end) + "]";
    const std::string shifted = "[" + std::to_string(wpe.begin - 4) + "," + std::to_string(wpe.end - 4) + "]";
    edit_header(overlap + "/model.safetensors", offsets, shifted);
    EXPECT_NE(import_error(overlap).find("overlap in the data area"), std::string::npos);

    const std::string wrong_dtype = copy_of_export("wrong_dtype");
    edit_header(wrong_dtype + "/model.safetensors", R"("transformer.wpe.weight":{"dtype":"F32")",
                R"("transformer.wpe.weight":{"dtype":"I32")");
    EXPECT_NE(import_error(wrong_dtype)
                  .find("tensor 'transformer.wpe.weight' has dtype I32, expected F32, BF16 or F16"),
              std::string::npos);

    const std::string missing = copy_of_export("missing");
    edit_header(missing + "/model.safetensors", "transformer.ln_f.bias", "transformer.ln_f.bia_");
    EXPECT_NE(import_error(missing).find("no tensor transformer.ln_f.bias, which every GPT2LMHeadModel has"),
              std::string::npos);

    const std::string shape = copy_of_export("shape");
    rewrite(shape + "/config.json", [](std::string& text) {
        const size_t at = text.find("\"n_positions\": 16");
        ASSERT_NE(at, std::string::npos);
        text.replace(at, 17, "\"n_positions\": 8 ");
    });
    EXPECT_NE(import_error(shape).find(
                  "transformer.wpe.weight is [16, 32], config.json's n_positions 8, n_embd 32 give [8, 32]"),
              std::string::npos);

    const std::string deeper = copy_of_export("deeper");
    rewrite(deeper + "/config.json", [](std::string& text) {
        const size_t at = text.find("\"n_layer\": 2");
        ASSERT_NE(at, std::string::npos);
        text.replace(at, 12, "\"n_layer\": 9");
    });
    EXPECT_NE(
        import_error(deeper).find(
            "no tensor transformer.h.2.attn.c_attn.weight; config.json's n_layer 9 gives layers 0 to 8"),
        std::string::npos);

    const std::string absurd = copy_of_export("absurd");
    rewrite(absurd + "/config.json", [](std::string& text) {
        const size_t at = text.find("\"n_layer\": 2");
        ASSERT_NE(at, std::string::npos);
        text.replace(at, 12, "\"n_layer\": 2000000000");
    });
    EXPECT_NE(import_error(absurd).find("n_layer: expected an integer in [1, 1024], found 2000000000"),
              std::string::npos);

    const std::string activation = copy_of_export("activation");
    rewrite(activation + "/config.json", [](std::string& text) {
        const size_t at = text.find("\"gelu_new\"");
        ASSERT_NE(at, std::string::npos);
        text.replace(at, 10, "\"gelu\"");
    });
    EXPECT_NE(import_error(activation).find("activation_function: \"gelu\" is not supported"),
              std::string::npos);

    const std::string bpe = copy_of_export("bpe");
    fs::remove(bpe + "/tokenizer.model");
    std::ofstream(bpe + "/vocab.json") << R"({"!": 0})";
    std::ofstream(bpe + "/merges.txt") << "#version: 0.2\n";
    EXPECT_NE(import_error(bpe).find("/vocab.json: no token for the byte 0x00 (not a byte-level BPE)"),
              std::string::npos);
}

// The reader also checks export --reference-out's logits, greedy tokens and ids (what the
// transformers check on a GPU host compares with).
TEST_F(InteropTest, IndependentNumpyReaderRecomputesTheValidationLoss) {
    if (run_python({"-c", "import numpy, h5py"}, scratch_.file("probe.txt")) != 0)
        GTEST_SKIP() << "/usr/bin/python3 with numpy and h5py is not available";
    const std::string checker = find_checker();
    ASSERT_FALSE(checker.empty()) << "scripts/check_hf_export.py not found above the test binary";
    const std::string eval_json = scratch_.write("eval.json", eval_report_json(evaluate(run())));
    const std::vector<std::string> arguments = {
        checker, "", "--dataset", tiny_dataset().dataset_path, "--eval-json", eval_json};

    interop::ReferenceOptions reference;
    reference.source = run();
    reference.output = scratch_.file("reference");
    reference.logits_tokens = 20;  // two windows of 16
    reference.prompt = "the cat";
    reference.new_tokens = 6;
    reference.threads = 1;
    interop::write_reference_outputs(reference);
    std::vector<std::string> good = arguments;
    good[1] = exported();
    good.insert(good.end(), {"--reference", reference.output});
    EXPECT_EQ(run_python(good, scratch_.file("good.txt")), 0)
        << testing::read_file(scratch_.file("good.txt"));
    EXPECT_NE(testing::read_file(scratch_.file("good.txt"))
                  .find("reference greedy continuation: 6 tokens, identical"),
              std::string::npos)
        << testing::read_file(scratch_.file("good.txt"));

    // ln_f.bias[0] raised by 1: every logit moves by its token's wte[., 0]; the reader must notice.
    const std::string spoiled = copy_of_export("spoiled");
    const interop::SafetensorsFile file = interop::read_safetensors(spoiled + "/model.safetensors");
    const uint64_t at = file.header.data_start() + file.header.find("transformer.ln_f.bias")->begin;
    rewrite(spoiled + "/model.safetensors", [&](std::string& bytes) {
        float value = 0;
        std::memcpy(&value, bytes.data() + at, 4);
        value += 1.f;
        std::memcpy(bytes.data() + at, &value, 4);
    });
    std::vector<std::string> bad = arguments;
    bad[1] = spoiled;
    EXPECT_EQ(run_python(bad, scratch_.file("bad.txt")), 1) << testing::read_file(scratch_.file("bad.txt"));
    EXPECT_NE(testing::read_file(scratch_.file("bad.txt")).find("mean loss differs"), std::string::npos);
}

}  // namespace
}  // namespace mixgpt
