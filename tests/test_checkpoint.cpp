// Checkpoint files: exact round trip, atomic write, refusal of truncated, corrupted and
// mismatched files with a message naming the problem, and the run directory's bookkeeping.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/h5.h"
#include "model/checkpoint.h"
#include "model/checkpoint_header.h"
#include "model/parameters.h"
#include "tests/checkpoint_expectations.h"
#include "tests/test_support.h"

namespace mixgpt {
namespace {

namespace fs = std::filesystem;

using test::error_of;

class CheckpointTest : public ::testing::Test {
protected:
    // A 1-layer GPT-2 of width 8 (or `config`, for its model options) with random contents.
    static Checkpoint make_checkpoint(int64_t step, const GPTConfig* config = nullptr) {
        Checkpoint checkpoint;
        checkpoint.config.n_layer = 1;
        checkpoint.config.n_head = 2;
        checkpoint.config.n_embd = 8;
        checkpoint.config.vocab_size = 20;
        checkpoint.config.max_seq_len = 8;
        if (config != nullptr) checkpoint.config = *config;
        checkpoint.tokenizer_path = "data/tiny/tokenizer.model";
        checkpoint.tokenizer_sha256 = std::string(64, 'a');
        checkpoint.precision = Precision::bf16;
        checkpoint.step = step;
        checkpoint.seed = 0x9e3779b97f4a7c15ull;
        checkpoint.tokens_seen = 1234 * step;
        checkpoint.bad_steps_in_a_row = step % 3;
        const size_t n = static_cast<size_t>(ParameterLayout(checkpoint.config).total());
        std::mt19937 random(static_cast<unsigned>(step));
        std::normal_distribution<float> normal;
        for (std::vector<float>* values : {&checkpoint.parameters, &checkpoint.adam_m, &checkpoint.adam_v})
            for (size_t i = 0; i < n; ++i) values->push_back(normal(random));
        for (size_t i = 0; i < n; ++i) checkpoint.working_bits.push_back(static_cast<uint16_t>(random()));
        checkpoint.status.loss_scale = 32768.f;
        checkpoint.status.clean_steps = 17;
        checkpoint.status.skipped_steps = 3;
        checkpoint.status.optimizer_steps = static_cast<int32_t>(step) - 3;
        checkpoint.loader_state = {2, 41, -7, int64_t{1} << 40};
        checkpoint.options = {
            {"lr", "0.00059999999999999995"}, {"dataset", "data/tiny/dataset.h5"}, {"empty", ""}};
        return checkpoint;
    }

    std::string path(const std::string& name) const { return directory_.file(name); }

    // Deletes a root attribute of a checkpoint file and re-signs its header (size and checksum of
    // the payload as it is now): a checkpoint as written before that attribute existed.
    static void remove_root_attribute(const std::string& file_path, const char* name) {
        {
            const h5::File file = h5::File::open_write(file_path);
            ASSERT_GE(H5Adelete(file.id(), name), 0);
        }
        std::ifstream in(file_path, std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        CheckpointHeader header;
        header.version = kCheckpointFormatVersion;
        header.payload_bytes = bytes.size() - kCheckpointHeaderBytes;
        header.payload_crc32 = static_cast<uint32_t>(
            crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()) + kCheckpointHeaderBytes,
                  static_cast<uInt>(header.payload_bytes)));
        bytes.replace(0, kCheckpointHeaderBytes, checkpoint_header_block(header));
        std::ofstream(file_path, std::ios::binary | std::ios::trunc) << bytes;
    }

    test::TempDirectory directory_{"mixgpt_checkpoint_test"};
};

TEST_F(CheckpointTest, RoundTripIsExact) {
    const Checkpoint written = make_checkpoint(40);
    write_checkpoint(path("a.h5"), written);
    const Checkpoint read = read_checkpoint(path("a.h5"));
    test::expect_same_checkpoint(read, written);
    EXPECT_EQ(read.status.loss_scale, 32768.f);  // what make_checkpoint wrote, not a default
    EXPECT_EQ(read.status.optimizer_steps, 37);

    const Checkpoint weights = read_checkpoint(path("a.h5"), CheckpointContent::weights);
    EXPECT_EQ(weights.parameters, written.parameters);
    EXPECT_TRUE(weights.adam_m.empty());
}

// The loss-spike guard's state (train --skip-spikes) is written only when the run has one.
TEST_F(CheckpointTest, SpikeGuardStateRoundTripsWhenThereIsOne) {
    Checkpoint written = make_checkpoint(40);
    write_checkpoint(path("unguarded.h5"), written);
    EXPECT_FALSE(read_checkpoint(path("unguarded.h5")).spike_guard.has_value());
    written.spike_guard = SpikeGuardState{{4.125, 1e-300, 3.0000000000000004}, {1.5, 0.25, 1e300}, 7, 3};
    write_checkpoint(path("guarded.h5"), written);
    const Checkpoint read = read_checkpoint(path("guarded.h5"));
    test::expect_same_checkpoint(read, written);
    EXPECT_EQ(read.spike_guard->skips, 7);
}

TEST_F(CheckpointTest, WriteLeavesOnlyTheFinalFile) {
    write_checkpoint(path("sub/dir/a.h5"), make_checkpoint(1));
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(path("sub/dir")))
        names.push_back(entry.path().filename());
    EXPECT_EQ(names, std::vector<std::string>{"a.h5"});

    Checkpoint broken = make_checkpoint(2);
    broken.adam_v.pop_back();
    EXPECT_THROW(write_checkpoint(path("b.h5"), broken), Error);
    EXPECT_FALSE(fs::exists(path("b.h5")));
}

TEST_F(CheckpointTest, TruncationAtAnyByteIsRefusedCleanly) {
    write_checkpoint(path("full.h5"), make_checkpoint(3));
    const auto size = static_cast<int64_t>(fs::file_size(path("full.h5")));
    fs::copy_file(path("full.h5"), path("cut.h5"));
    for (int64_t length = size - 1; length >= 0; --length) {
        ASSERT_EQ(::truncate(path("cut.h5").c_str(), length), 0);
        const std::string message = error_of([&] { read_checkpoint(path("cut.h5")); });
        ASSERT_NE(message.find(path("cut.h5") + ": "), std::string::npos)
            << "length " << length << ": " << message;
        ASSERT_TRUE(message.find("truncated") != std::string::npos ||
                    message.find("not a mixgpt") != std::string::npos)
            << "length " << length << ": " << message;
    }
}

TEST_F(CheckpointTest, CorruptionAnywhereIsRefused) {
    write_checkpoint(path("bad.h5"), make_checkpoint(4));
    const auto size = static_cast<int64_t>(fs::file_size(path("bad.h5")));
    const auto flip_byte = [&](int64_t position) {
        std::fstream file(path("bad.h5"), std::ios::binary | std::ios::in | std::ios::out);
        file.seekg(position);
        const char original = static_cast<char>(file.get());
        file.seekp(position);
        file.put(static_cast<char>(original ^ 0x5a));
    };
    // Every 3rd byte after the header (HDF5 metadata and datasets alike), one at a time.
    for (int64_t position = 512; position < size; position += 3) {
        flip_byte(position);
        const std::string message = error_of([&] { read_checkpoint(path("bad.h5")); });
        ASSERT_NE(message.find("corrupt checkpoint (checksum mismatch)"), std::string::npos)
            << "byte " << position << ": " << message;
        flip_byte(position);
    }
    EXPECT_NO_THROW(read_checkpoint(path("bad.h5")));
    flip_byte(0);
    EXPECT_NE(error_of([&] { read_checkpoint(path("bad.h5")); }).find("not a mixgpt checkpoint"),
              std::string::npos);
}

TEST_F(CheckpointTest, MismatchedShapeOrTokenizerNamesTheField) {
    const Checkpoint checkpoint = make_checkpoint(5);
    const std::string sha = checkpoint.tokenizer_sha256;
    EXPECT_NO_THROW(require_compatible(checkpoint, "c.h5", checkpoint.config, sha));
    struct Case {
        const char* field;
        int GPTConfig::*member;
    };
    for (const Case& change : {Case{"n_layer", &GPTConfig::n_layer}, Case{"n_head", &GPTConfig::n_head},
                               Case{"n_embd", &GPTConfig::n_embd}, Case{"vocab_size", &GPTConfig::vocab_size},
                               Case{"max_seq_len", &GPTConfig::max_seq_len}}) {
        GPTConfig other = checkpoint.config;
        other.*change.member *= 2;
        const std::string message = error_of([&] { require_compatible(checkpoint, "c.h5", other, sha); });
        EXPECT_NE(message.find(std::string(change.field) + " is "), std::string::npos) << message;
        EXPECT_EQ(message.rfind("c.h5: ", 0), 0u) << message;
    }
    const std::string message =
        error_of([&] { require_compatible(checkpoint, "c.h5", checkpoint.config, std::string(64, 'b')); });
    EXPECT_NE(message.find("tokenizer_sha256"), std::string::npos) << message;
}

// The logit soft-cap is part of the model: written, read back, refused when the run's differs
// (naming --logit-softcap, one line); a checkpoint from before the option (no attribute) reads as off.
TEST_F(CheckpointTest, LogitSoftcapRoundTripsAndMismatchesAreRefused) {
    Checkpoint capped = make_checkpoint(5);
    capped.config.logit_softcap = 15.f;
    write_checkpoint(path("capped.h5"), capped);
    const Checkpoint read = read_checkpoint(path("capped.h5"));
    EXPECT_EQ(read.config.logit_softcap, 15.f);
    EXPECT_NO_THROW(require_compatible(read, "c.h5", capped.config, capped.tokenizer_sha256));
    GPTConfig off = capped.config;
    off.logit_softcap = 0.f;
    const std::string message =
        error_of([&] { require_compatible(read, "c.h5", off, capped.tokenizer_sha256); });
    EXPECT_EQ(message,
              "c.h5: refusing checkpoint: logit_softcap is 15 there, off in this run (--logit-softcap)");

    remove_root_attribute(path("capped.h5"), "logit_softcap");
    EXPECT_EQ(read_checkpoint(path("capped.h5")).config.logit_softcap, 0.f);
}

// The MLP (--mlp) likewise: relu2 written and read back, a mismatch refused naming --mlp; a
// checkpoint without the attribute has the family's own MLP.
TEST_F(CheckpointTest, MlpRoundTripsAndMismatchesAreRefused) {
    Checkpoint relu2 = make_checkpoint(5);  // GPT-2: relu2 is 4C wide as GELU, the same tensors
    relu2.config.mlp = MlpKind::relu2;
    write_checkpoint(path("relu2.h5"), relu2);
    const Checkpoint read = read_checkpoint(path("relu2.h5"));
    EXPECT_EQ(read.config.mlp_kind(), MlpKind::relu2);
    EXPECT_NO_THROW(require_compatible(read, "c.h5", relu2.config, relu2.tokenizer_sha256));
    GPTConfig own = relu2.config;
    own.mlp.reset();
    EXPECT_EQ(error_of([&] { require_compatible(read, "c.h5", own, relu2.tokenizer_sha256); }),
              "c.h5: refusing checkpoint: mlp is relu2 there, gelu in this run (--mlp)");
    remove_root_attribute(path("relu2.h5"), "mlp");
    EXPECT_EQ(read_checkpoint(path("relu2.h5")).config.mlp_kind(), MlpKind::gelu);
}

// Parameter-free norms (--norm-weights false) likewise: no norm tensors, the setting read back, a
// mismatch refused naming --norm-weights; a checkpoint without the attribute has norm weights.
TEST_F(CheckpointTest, NormWeightsRoundTripAndMismatchesAreRefused) {
    GPTConfig parameter_free = make_checkpoint(5).config;
    parameter_free.norm_weights = false;
    Checkpoint written = make_checkpoint(5, &parameter_free);
    write_checkpoint(path("free.h5"), written);
    const Checkpoint read = read_checkpoint(path("free.h5"));
    EXPECT_FALSE(read.config.norm_weights);
    EXPECT_EQ(read.parameters, written.parameters);
    EXPECT_LT(read.parameters.size(), make_checkpoint(5).parameters.size());  // no ln_1, ln_2, ln_f
    EXPECT_NO_THROW(require_compatible(read, "c.h5", parameter_free, written.tokenizer_sha256));
    EXPECT_EQ(error_of([&] {
                  require_compatible(read, "c.h5", make_checkpoint(5).config, written.tokenizer_sha256);
              }),
              "c.h5: refusing checkpoint: norm_weights is false there, true in this run (--norm-weights)");
    write_checkpoint(path("weighted.h5"), make_checkpoint(5));
    remove_root_attribute(path("weighted.h5"), "norm_weights");
    EXPECT_TRUE(read_checkpoint(path("weighted.h5")).config.norm_weights);
}

// --zero-init likewise (it only sets how training starts, but a resume that asks for another start
// than the run had is refused, naming --zero-init); a checkpoint without the attribute has none.
TEST_F(CheckpointTest, ZeroInitRoundTripsAndMismatchesAreRefused) {
    GPTConfig zeroed = make_checkpoint(5).config;
    zeroed.zero_init_projections = true;
    const Checkpoint written = make_checkpoint(5, &zeroed);
    write_checkpoint(path("zero.h5"), written);
    const Checkpoint read = read_checkpoint(path("zero.h5"));
    EXPECT_EQ(read.config.zero_init_name(), "proj");
    EXPECT_NO_THROW(require_compatible(read, "c.h5", zeroed, written.tokenizer_sha256));
    EXPECT_EQ(error_of([&] {
                  require_compatible(read, "c.h5", make_checkpoint(5).config, written.tokenizer_sha256);
              }),
              "c.h5: refusing checkpoint: zero_init is proj there, none in this run (--zero-init)");
    remove_root_attribute(path("zero.h5"), "zero_init");
    EXPECT_EQ(read_checkpoint(path("zero.h5")).config.zero_init_name(), "none");
}

// The model switches likewise, each recorded and read back, a mismatch refused naming its option,
// absent read as off: the embedding norm (with its tensors, ln_emb) and QK-norm (no tensors).
TEST_F(CheckpointTest, ModelSwitchesRoundTripAndMismatchesAreRefused) {
    const struct {
        const char* attribute;
        const char* option;
        bool GPTConfig::*setting;
        size_t extra_parameters;
    } switches[] = {{"embedding_norm", "--embedding-norm", &GPTConfig::embedding_norm, 2 * 8},  // weight, bias
                    {"qk_norm", "--qk-norm", &GPTConfig::qk_norm, 0}};
    for (const auto& on : switches) {
        SCOPED_TRACE(on.attribute);
        GPTConfig config = make_checkpoint(5).config;
        config.*on.setting = true;
        const Checkpoint written = make_checkpoint(5, &config);
        write_checkpoint(path("on.h5"), written);
        const Checkpoint read = read_checkpoint(path("on.h5"));
        EXPECT_TRUE(read.config.*on.setting);
        EXPECT_EQ(read.parameters.size(), make_checkpoint(5).parameters.size() + on.extra_parameters);
        EXPECT_EQ(
            error_of(
                [&] { require_compatible(read, "c.h5", make_checkpoint(5).config, written.tokenizer_sha256); }),
            std::string("c.h5: refusing checkpoint: ") + on.attribute + " is true there, false in this run (" +
                on.option + ")");
        write_checkpoint(path("plain.h5"), make_checkpoint(5));
        remove_root_attribute(path("plain.h5"), on.attribute);
        EXPECT_FALSE(read_checkpoint(path("plain.h5")).config.*on.setting);
    }
}

// --init likewise: recorded, read back, a mismatch refused naming --init; absent reads as gpt2.
TEST_F(CheckpointTest, InitSchemeRoundTripsAndMismatchesAreRefused) {
    GPTConfig fan_in = make_checkpoint(5).config;
    fan_in.arch = Arch::llama;
    fan_in.tie_embeddings = false;
    fan_in.init = InitScheme::fan_in;
    const Checkpoint written = make_checkpoint(5, &fan_in);
    write_checkpoint(path("fan_in.h5"), written);
    const Checkpoint read = read_checkpoint(path("fan_in.h5"));
    EXPECT_EQ(read.config.init, InitScheme::fan_in);
    GPTConfig gpt2_init = fan_in;
    gpt2_init.init = InitScheme::gpt2;
    EXPECT_EQ(error_of([&] { require_compatible(read, "c.h5", gpt2_init, written.tokenizer_sha256); }),
              "c.h5: refusing checkpoint: init is fan-in there, gpt2 in this run (--init)");
    remove_root_attribute(path("fan_in.h5"), "init");
    EXPECT_EQ(read_checkpoint(path("fan_in.h5")).config.init, InitScheme::gpt2);
}

TEST_F(CheckpointTest, RunDirectoryKeepsTheNewestAndSkipsInvalidOnes) {
    const std::string run = path("run");
    EXPECT_TRUE(list_checkpoints(run).empty());
    EXPECT_EQ(newest_valid_checkpoint(run), "");
    for (int64_t step : {5, 10, 100, 20}) {
        Checkpoint checkpoint = make_checkpoint(step);
        checkpoint.run_id = "lineage1";
        write_checkpoint(checkpoint_path(run, step), checkpoint);
    }
    Checkpoint other_run = make_checkpoint(3);  // another lineage: never removed
    other_run.run_id = "lineage2";
    write_checkpoint(checkpoint_path(run, 3), other_run);
    write_checkpoint(checkpoint_path(run, 4), make_checkpoint(4));  // no lineage (an older file)
    std::ofstream(run + "/notes.txt") << "not a checkpoint";
    EXPECT_EQ(list_checkpoints(run),
              (std::vector<std::string>{checkpoint_path(run, 3), checkpoint_path(run, 4),
                                        checkpoint_path(run, 5), checkpoint_path(run, 10),
                                        checkpoint_path(run, 20), checkpoint_path(run, 100)}));
    EXPECT_EQ(checkpoint_run_id(checkpoint_path(run, 5)), "lineage1");
    EXPECT_EQ(read_checkpoint(checkpoint_path(run, 3)).run_id, "lineage2");
    EXPECT_EQ(remove_old_checkpoints(run, 2, "lineage1", checkpoint_path(run, 10)),
              (std::vector<std::string>{checkpoint_path(run, 5)}));  // 10 is protected
    EXPECT_EQ(remove_old_checkpoints(run, 2, "lineage1", ""),
              (std::vector<std::string>{checkpoint_path(run, 10)}));
    EXPECT_EQ(list_checkpoints(run),
              (std::vector<std::string>{checkpoint_path(run, 3), checkpoint_path(run, 4),
                                        checkpoint_path(run, 20), checkpoint_path(run, 100)}));
    for (const std::string& path : {checkpoint_path(run, 3), checkpoint_path(run, 4)})
        ASSERT_EQ(::unlink(path.c_str()), 0);
    EXPECT_EQ(newest_valid_checkpoint(run), checkpoint_path(run, 100));
    ASSERT_EQ(::truncate(checkpoint_path(run, 100).c_str(), 1000), 0);
    EXPECT_EQ(newest_valid_checkpoint(run), checkpoint_path(run, 20));
    EXPECT_EQ(read_checkpoint(newest_valid_checkpoint(run)).step, 20);
}

// The run id line of the header: written back as read, and anything else after the CRC refused.
TEST(CheckpointHeaderTest, RunIdIsOptionalAndChecked) {
    CheckpointHeader header;
    header.version = kCheckpointFormatVersion;
    header.payload_bytes = 1234;
    header.payload_crc32 = 0xdeadbeef;
    const std::string without = checkpoint_header_block(header);
    EXPECT_EQ(parse_checkpoint_header(without.data(), without.size(), "c.h5").run_id, "");
    header.run_id = "0123456789abcdef0123456789abcdef";
    const std::string with = checkpoint_header_block(header);
    EXPECT_EQ(parse_checkpoint_header(with.data(), with.size(), "c.h5").run_id, header.run_id);
    const std::string prefix = without.substr(0, without.find('\0'));
    for (const std::string& tail :
         {std::string("run_id ABC\n"), std::string("run_id \n"), "run_id " + std::string(65, 'a') + "\n",
          std::string("owner me\n"), std::string("run_id abc\nmore\n")}) {
        std::string block = prefix + tail;
        block.resize(kCheckpointHeaderBytes, '\0');
        const std::string message =
            error_of([&] { parse_checkpoint_header(block.data(), block.size(), "c.h5"); });
        EXPECT_NE(message.find("c.h5: corrupt checkpoint header"), std::string::npos)
            << tail << ": " << message;
    }
}

}  // namespace
}  // namespace mixgpt
