// Bad input, options family (issue 36): the command line says what it wants in words and takes
// nothing silently. An option given several times takes one value each time, never the
// positionals after it; range checks say "must be > 0", not 309 digits of DBL_MAX; --fp8-*
// without --precision fp8 is refused, as family options are for the wrong family; a 0 that
// means "all" is refused on the command line everywhere; and errors name their file and field.
// --tensorboard's folder is checked before a run starts.
#include <gtest/gtest.h>

#include <filesystem>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/bad_inputs_support.h"
#include "tests/test_tokenizer_support.h"

namespace mixgpt {
namespace {

using namespace test;
namespace fs = std::filesystem;

class BadOptionsTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        fixture_ = make_bad_input_fixture("mixgpt_bad_options").release();
        const TempDirectory& d = *fixture_;
        BadInputRunner runner(d);
        ASSERT_EQ(runner.run({"export", "{D}/run", "-o", "{D}/hf"}).exit_status, 0);
        d.write("task.jsonl", "{\"context\": \"the cat\", \"choices\": [\"sees\", \"likes\"], \"label\": 0}\n");
        d.write("far_rank.tiktoken", "IQ== 0\nIg== 3000000000\n");
        fs::copy(d.file("hf"), d.file("hf_fp7"), fs::copy_options::recursive);
        set_safetensors_metadata(d.file("hf_fp7/model.safetensors"), "mixgpt_precision", "fp7");
    }
    static void TearDownTestSuite() {
        delete fixture_;
        fixture_ = nullptr;
    }

    // Rewrites one __metadata__ entry of a safetensors file (the header padded to 8 bytes).
    static void set_safetensors_metadata(const std::string& path, const std::string& key,
                                         const std::string& value) {
        const std::string bytes = testing::read_file(path);
        uint64_t header_bytes = 0;
        std::memcpy(&header_bytes, bytes.data(), 8);
        nlohmann::json header = nlohmann::json::parse(bytes.substr(8, header_bytes));
        header["__metadata__"][key] = value;
        std::string text = header.dump();
        text.append((8 - text.size() % 8) % 8, ' ');
        const uint64_t size = text.size();
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(&size), 8);
        out << text << bytes.substr(8 + header_bytes);
    }

    static inline TempDirectory* fixture_ = nullptr;
    BadInputRunner runner_{*fixture_};
};

std::vector<BadInput> option_cases() {
    return {
        // CLI11's PositiveNumber printed "Value 0 not in range 0.000000 to 1797..." (309 digits).
        {"train --n-kv-head 0",
         train_with({"--n-kv-head", "0"}, "{D}/run_kv"),
         2,
         {"--n-kv-head: must be > 0 (got 0)"}},
        {"eval --limit 0",
         {"eval", "{D}/run", "--task", "mc", "--data", "{D}/task.jsonl", "--limit", "0"},
         2,
         {"--limit: must be > 0 (got 0)"}},
        // Documented as positive, refused below 1 by the library only after the command line passed it.
        {"train --rope-theta 1",
         train_with({"--arch", "llama", "--rope-theta", "1"}, "{D}/run_rope"),
         2,
         {"--rope-theta: must be > 1 (got 1)"}},
        // Ignored without a word, while family options are refused for the wrong family.
        {"train --fp8-margin without --precision fp8",
         train_with({"--fp8-margin", "2"}, "{D}/run_fp8"),
         1,
         {"--fp8-margin: only with --precision fp8 (the precision is fp32)"}},
        {"train --muon-lr without --optimizer muon", train_with({"--muon-lr", "0.01"}, "{D}/run_muon_lr"), 1,
         {"--muon-lr: only with --optimizer muon (the optimizer is adamw)"}},
        {"train --optimizer sgd", train_with({"--optimizer", "sgd"}, "{D}/run_sgd"), 1,
         {"optimizer: 'sgd' is not one of adamw, muon"}},
        {"train --muon-ns-precision fp16",
         train_with({"--optimizer", "muon", "--muon-ns-precision", "fp16"}, "{D}/run_ns_fp16"), 1,
         {"--muon-ns-precision: 'fp16' is not one of bf16, fp32"}},
        // 0 meant "all" here and was refused by eval --limit.
        {"train --task-eval-limit 0",
         train_with({"--task-eval", "mc:{D}/task.jsonl", "--task-eval-limit", "0"}, "{D}/run_limit"),
         2,
         {"--task-eval-limit: must be > 0 (got 0)"}},
        // One value per flag: a second one is not taken as another value of the option.
        {"train --dataset A B", train_with({"--dataset", "{DATA}", "{DATA}"}, "{D}/run_two"), 2, {"{DATA}"}},
        // The logit soft-cap and the z-loss (issue 38): a cap must be a positive finite number, a
        // z-loss weight a finite one >= 0; a run resumed with another cap than its checkpoint's.
        {"train --logit-softcap 0",
         train_with({"--logit-softcap", "0"}, "{D}/run_cap0"),
         2,
         {"--logit-softcap: must be > 0 (got 0)"}},
        {"train --logit-softcap -3",
         train_with({"--logit-softcap", "-3"}, "{D}/run_cap_negative"),
         2,
         {"--logit-softcap: must be > 0 (got -3)"}},
        {"train --logit-softcap nan",
         train_with({"--logit-softcap", "nan"}, "{D}/run_cap_nan"),
         2,
         {"--logit-softcap: must be > 0 (got nan)"}},
        {"train --logit-softcap inf",
         train_with({"--logit-softcap", "inf"}, "{D}/run_cap_inf"),
         1,
         {"logit-softcap: must be a positive finite number"}},
        {"train --z-loss -1",
         train_with({"--z-loss", "-1"}, "{D}/run_z_negative"),
         2,
         {"--z-loss: must be >= 0 (got -1)"}},
        {"train --z-loss inf",
         train_with({"--z-loss", "inf"}, "{D}/run_z_inf"),
         1,
         {"z-loss: must be a finite number >= 0 (0: off)"}},
        {"train --logit-softcap 15 resuming an uncapped run",
         train_with({"--logit-softcap", "15", "--resume", "{D}/run/checkpoints/step_00000002.h5"},
                    "{D}/run_cap_resume"),
         1,
         {"refusing checkpoint: logit_softcap is off there, 15 in this run (--logit-softcap)"}},
        // The recipe's model options (issue 38): an MLP the family's tensors cannot hold, a SwiGLU
        // width rule with another MLP, a run resumed with another option than its checkpoint's.
        {"train --mlp swiglu under gpt2",
         train_with({"--mlp", "swiglu"}, "{D}/run_mlp_family"),
         1,
         {"mlp: swiglu is not an MLP of --arch gpt2 (gelu, its own, or relu2)"}},
        {"train --mlp relu2 --ffn-multiplier",
         train_with({"--arch", "llama", "--mlp", "relu2", "--ffn-multiplier", "1.3"}, "{D}/run_mlp_multiplier"),
         1,
         {"ffn-multiplier: scales --arch llama's swiglu width rule; --mlp relu2 is 4 * width unless --ffn-hidden"}},
        {"train --mlp relu2 resuming a gelu run",
         train_with({"--mlp", "relu2", "--resume", "{D}/run/checkpoints/step_00000002.h5"}, "{D}/run_mlp_resume"),
         1,
         {"refusing checkpoint: mlp is gelu there, relu2 in this run (--mlp)"}},
        {"train --zero-init head under gpt2",
         train_with({"--zero-init", "head"}, "{D}/run_zero_head"),
         1,
         {"zero-init: head needs an output head of its own (--arch llama --tie-embeddings false); --arch gpt2's "
          "head is the token embedding, which would start at zero"}},
        {"train --zero-init bias",
         train_with({"--zero-init", "proj,bias"}, "{D}/run_zero_bias"),
         1,
         {"zero-init: 'bias' is not proj or head (a comma-separated list, or none)"}},
        {"train --zero-init proj resuming a run without",
         train_with({"--zero-init", "proj", "--resume", "{D}/run/checkpoints/step_00000002.h5"}, "{D}/run_zero_resume"),
         1,
         {"refusing checkpoint: zero_init is none there, proj in this run (--zero-init)"}},
        {"train --embedding-norm resuming a run without",
         train_with({"--embedding-norm", "--resume", "{D}/run/checkpoints/step_00000002.h5"}, "{D}/run_emb_resume"),
         1,
         {"refusing checkpoint: embedding_norm is false there, true in this run (--embedding-norm)"}},
        {"train --recipe nanochat --arch gpt2",
         train_with({"--recipe", "nanochat", "--arch", "gpt2"}, "{D}/run_recipe_arch"),
         2,
         {"--arch excludes --recipe"}},
        {"train --recipe chinchilla",
         train_with({"--recipe", "chinchilla"}, "{D}/run_recipe_unknown"),
         2,
         {"--recipe: chinchilla not in {nanochat}"}},
        {"train --init fan-in under gpt2",
         train_with({"--init", "fan-in"}, "{D}/run_fan_in_tied"),
         1,
         {"init fan-in needs an output head of its own (tie_embeddings false)"}},
        {"train --qk-norm resuming a run without",
         train_with({"--qk-norm", "--resume", "{D}/run/checkpoints/step_00000002.h5"}, "{D}/run_qk_resume"),
         1,
         {"refusing checkpoint: qk_norm is false there, true in this run (--qk-norm)"}},
        {"train --norm-weights false resuming a run with norm weights",
         train_with({"--norm-weights", "false", "--resume", "{D}/run/checkpoints/step_00000002.h5"},
                    "{D}/run_norm_resume"),
         1,
         {"refusing checkpoint: norm_weights is true there, false in this run (--norm-weights)"}},
        // "out of memory (std::bad_alloc)", naming neither file nor line.
        {"prepare with a .tiktoken rank of 3e9",
         {"prepare", "--output", "{D}/out_tiktoken", "--tokenizer", "{D}/far_rank.tiktoken", "--threads", "1",
          "{D}/corpus"},
         1,
         {"{D}/far_rank.tiktoken:2: rank 3000000000"}},
        // --tensorboard (issue 40): a folder that cannot be made is refused before the run starts
        // (no run directory, no checkpoint), one inside the dataset as -o is, an empty one in words.
        {"train --tensorboard under a file", train_with({"--tensorboard", "{D}/task.jsonl/tb"}, "{D}/run_tb"), 1,
         {"tensorboard: {D}/task.jsonl/tb: cannot create the folder ({D}/task.jsonl is not a folder)"}},
        {"train --tensorboard inside the dataset", train_with({"--tensorboard", "{DATA}/tb"}, "{D}/run_tb"), 1,
         {"tensorboard: {DATA}/tb lies in the dataset {DATA}", "choose another --tensorboard"}},
        {"train --tensorboard ''", train_with({"--tensorboard", ""}, "{D}/run_tb"), 2,
         {"--tensorboard: must not be empty"}},
        // "unknown precision 'fp7'", naming neither file nor key.
        {"import: mixgpt_precision fp7",
         {"import", "{D}/hf_fp7", "-o", "{D}/imported"},
         1,
         {"{D}/hf_fp7/model.safetensors: __metadata__ mixgpt_precision: unknown precision 'fp7'"}},
    };
}

TEST_F(BadOptionsTest, Cases) {
    for (const BadInput& bad : option_cases()) {
        const std::string line = runner_.check(bad);
        EXPECT_LT(line.size(), 300u) << line;
    }
    EXPECT_FALSE(fs::exists(fixture_->file("run_tb")));
}

// prepare --include PAT DIR took DIR as a second pattern ("no input"); eval --text FILE RUN took
// RUN as a second text file.
TEST_F(BadOptionsTest, RepeatableOptionsLeaveThePositionals) {
    TempDirectory scratch("mixgpt_options_positionals");
    const Outcome prepared = runner_.run({"prepare", "--output", scratch.file("out"), "--tokenizer",
                                          "{DATA}/tokenizer.model", "--threads", "1", "--include", "*.md",
                                          "{D}/corpus"});
    EXPECT_EQ(prepared.exit_status, 0) << prepared.err;
    EXPECT_NE(prepared.err.find("took 3 files"), std::string::npos) << prepared.err;
    const Outcome evaluated =
        runner_.run({"eval", "--text", "{D}/corpus/doc1000.txt", "{D}/run", "--threads", "1"});
    EXPECT_EQ(evaluated.exit_status, 0) << evaluated.err;
}

// --corpus kjv logged "inputs: took 0 files, 0.0 MB".
TEST_F(BadOptionsTest, BuiltinCorpusSaysWhatItTook) {
    TempDirectory scratch("mixgpt_options_kjv");
    const Outcome prepared = runner_.run({"prepare", "--corpus", "kjv", "--output", scratch.file("kjv"),
                                          "--tokenizer", "{DATA}/tokenizer.model", "--threads", "1"});
    ASSERT_EQ(prepared.exit_status, 0) << prepared.err;
    EXPECT_EQ(prepared.err.find("took 0 files"), std::string::npos) << prepared.err;
    EXPECT_NE(prepared.err.find("inputs: the KJV corpus, 1189 documents, 4."), std::string::npos) << prepared.err;
}

}  // namespace
}  // namespace mixgpt
