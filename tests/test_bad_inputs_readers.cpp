// Bad input, readers family (issue 36, family 5): commands that read what another command wrote.
// export, eval and sample of a run that train is rotating take the newest checkpoint they can
// read, and say so in one line when it is not the newest listed; import names the first tensor
// whose shape is not the one config.json gives, and the fields that decide it; eval --per-example
// and bench --json-out refuse an empty path, and write through a dangling link instead of
// replacing it. Each refusal records every file of the fixture before it runs, and checks them all
// afterwards.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/bad_inputs_support.h"

namespace mixgpt {
namespace {

using namespace test;
namespace fs = std::filesystem;

// A copy of the Hugging Face folder `from` as `to`, its config.json's `field` set to `value`.
void edit_config(const TempDirectory& d, const std::string& from, const std::string& to,
                 const std::string& field, const std::string& value) {
    fs::copy(d.file(from), d.file(to), fs::copy_options::recursive);
    std::string text = read_text(d.file(to + "/config.json"));
    const size_t at = text.find("\"" + field + "\": ");
    ASSERT_NE(at, std::string::npos) << field;
    const size_t begin = at + field.size() + 4, end = text.find_first_of(",\n", begin);
    text.replace(begin, end - begin, value);
    d.write(to + "/config.json", text);
}

class BadReadersTest : public ::testing::Test {
protected:
    // The common fixture, plus: hf/ (run/ exported) and llama_hf/ (a Llama run with two key/value
    // heads of four, exported), each with copies whose config.json differs in one field;
    // vanished/ (run/ with a newest checkpoint that is gone when opened: a link to nothing),
    // hand_edited/ (run/ with a newer checkpoint whose checksum holds but whose step is -1),
    // nothing_valid/ (only a truncated checkpoint and a vanished one), task.jsonl and
    // link_nowhere (a link into a folder that does not exist).
    static void SetUpTestSuite() {
        fixture_ = make_bad_input_fixture("mixgpt_bad_readers").release();
        const TempDirectory& d = *fixture_;
        BadInputRunner runner(d);
        ASSERT_EQ(runner.run({"export", "{D}/run", "-o", "{D}/hf"}).exit_status, 0);
        const Outcome llama =
            runner.run(train_with({"--arch", "llama", "--n-head", "4", "--n-kv-head", "2"}, "{D}/llama_run"));
        ASSERT_EQ(llama.exit_status, 0) << llama.err;
        ASSERT_EQ(runner.run({"export", "{D}/llama_run", "-o", "{D}/llama_hf"}).exit_status, 0);
        edit_config(d, "hf", "hf_wide", "n_embd", "64");
        edit_config(d, "hf", "hf_deeper", "n_layer", "3");
        edit_config(d, "hf", "hf_shallower", "n_layer", "1");
        edit_config(d, "hf", "hf_longer", "n_positions", "32");
        edit_config(d, "llama_hf", "llama_kv", "num_key_value_heads", "4");
        edit_config(d, "llama_hf", "llama_mlp", "intermediate_size", "64");

        const std::string trained = d.file("run/checkpoints/step_00000002.h5");
        fs::copy(d.file("run"), d.file("vanished"), fs::copy_options::recursive);
        fs::create_symlink(d.file("gone.h5"), d.file("vanished/checkpoints/step_00000009.h5"));
        fs::copy(d.file("run"), d.file("hand_edited"), fs::copy_options::recursive);
        Checkpoint negative = read_checkpoint(trained);
        negative.step = -1;
        write_checkpoint(d.file("hand_edited/checkpoints/step_00000003.h5"), negative);
        fs::create_directories(d.file("nothing_valid/checkpoints"));
        fs::copy(trained, d.file("nothing_valid/checkpoints/step_00000002.h5"));
        fs::resize_file(d.file("nothing_valid/checkpoints/step_00000002.h5"), 4096);
        fs::create_symlink(d.file("gone.h5"), d.file("nothing_valid/checkpoints/step_00000003.h5"));

        d.write("task.jsonl",
                "{\"context\": \"the cat\", \"choices\": [\"sees\", \"likes\"], \"label\": 0}\n");
        fs::create_symlink(d.file("nowhere/scores.jsonl"), d.file("link_nowhere"));
    }
    static void TearDownTestSuite() {
        delete fixture_;
        fixture_ = nullptr;
    }

    // export, eval and sample of `run`, each into `scratch` where it writes.
    static std::vector<std::vector<std::string>> readers_of(const std::string& run,
                                                            const TempDirectory& scratch) {
        return {{"export", run, "-o", scratch.file("hf_" + std::to_string(next_export_++))},
                {"eval", run, "--threads", "1", "--max-tokens", "64"},
                {"sample", run, "-n", "4", "--threads", "1"}};
    }

    static inline TempDirectory* fixture_ = nullptr;
    static inline int next_export_ = 0;
    BadInputRunner runner_{*fixture_};
};

std::vector<BadInput> reader_cases() {
    const std::vector<std::string> per_example = {
        "eval", "{D}/run", "--task", "mc", "--data", "{D}/task.jsonl", "--threads", "1", "--per-example"};
    const auto with = [](std::vector<std::string> arguments, const std::string& last) {
        arguments.push_back(last);
        return arguments;
    };
    return {
        // Each import below said "config.json describes N parameters, model.safetensors holds M
        // values", or named the tensor but not the field.
        {"import: n_embd wider than the tensors",
         {"import", "{D}/hf_wide", "-o", "{D}/imported"},
         1,
         {"{D}/hf_wide/model.safetensors: transformer.wte.weight is [", "32], config.json's vocab_size",
          "n_embd 64 give [", "64]"}},
        {"import: n_layer beyond the file's layers",
         {"import", "{D}/hf_deeper", "-o", "{D}/imported"},
         1,
         {"{D}/hf_deeper/model.safetensors: no tensor transformer.h.2.",
          "config.json's n_layer 3 gives layers 0 to 2"}},
        {"import: n_layer short of the file's layers",
         {"import", "{D}/hf_shallower", "-o", "{D}/imported"},
         1,
         {"{D}/hf_shallower/model.safetensors: extra tensor transformer.h.1.",
          "config.json's n_layer 1 gives layer 0 only"}},
        {"import: n_positions beyond the position table",
         {"import", "{D}/hf_longer", "-o", "{D}/imported"},
         1,
         {"{D}/hf_longer/model.safetensors: transformer.wpe.weight is [16, 32], "
          "config.json's n_positions 32, n_embd 32 give [32, 32]"}},
        {"import: num_key_value_heads not the file's",
         {"import", "{D}/llama_kv", "-o", "{D}/imported"},
         1,
         {"{D}/llama_kv/model.safetensors: model.layers.0.self_attn.k_proj.weight is [16, 32], config.json's "
          "num_key_value_heads 4, num_attention_heads 4, hidden_size 32 give [32, 32]"}},
        {"import: intermediate_size not the file's",
         {"import", "{D}/llama_mlp", "-o", "{D}/imported"},
         1,
         {"{D}/llama_mlp/model.safetensors: model.layers.0.mlp.gate_proj.weight is [",
          "config.json's intermediate_size 64, hidden_size 32 give [64, 32]"}},
        // Replaced the link by a file of scores, exit 0.
        {"eval --per-example through a link into a missing folder",
         with(per_example, "{D}/link_nowhere"),
         1,
         {"{D}/link_nowhere: cannot create its link's target {D}/nowhere/scores.jsonl ",
          "(No such file or directory)"}},
        // Wrote nothing, exit 0.
        {"eval --per-example ''", with(per_example, ""), 2, {"--per-example: must name a file (got '')"}},
        {"bench --json-out ''",
         {"bench", "--model", "d2", "--n-embd", "32", "-b", "2", "-t", "16", "--json-out", ""},
         2,
         {"--json-out: must name a file (got '')"}},
        // Said so before too; kept: a run with no readable checkpoint still fails in one line.
        {"eval of a run with no readable checkpoint",
         {"eval", "{D}/nothing_valid", "--threads", "1"},
         1,
         {"{D}/nothing_valid: no valid checkpoint in this directory or its checkpoints/"}},
    };
}

TEST_F(BadReadersTest, Cases) {
    for (const BadInput& bad : reader_cases()) runner_.check(bad);
}

// The newest listed checkpoint vanished before it was opened: the readers took the next-newest
// without saying which (a warning that the newest was invalid, nothing about what was taken).
// One whose checksum holds but which cannot be read (a step of -1): each reader failed.
TEST_F(BadReadersTest, ReadersTakeTheNextNewestAndSayWhich) {
    TempDirectory scratch("mixgpt_readers_fallback");
    const std::map<std::string, std::string> before = file_hashes(fixture_->path());
    for (const auto& [run, newest, why] :
         {std::make_tuple("vanished", "step_00000009.h5", "it vanished before it was opened"),
          std::make_tuple("hand_edited", "step_00000003.h5", "attribute 'step' is -1")}) {
        const std::string checkpoints = fixture_->file(std::string(run) + "/checkpoints/");
        for (const std::vector<std::string>& reader : readers_of(fixture_->file(run), scratch)) {
            SCOPED_TRACE(reader[0] + " " + run);
            const Outcome outcome = runner_.run(reader);
            EXPECT_EQ(outcome.exit_status, 0) << outcome.err;
            EXPECT_NE(outcome.err.find(checkpoints + "step_00000002.h5: taken, not the newest listed, " +
                                       checkpoints + newest + " (" + why),
                      std::string::npos)
                << outcome.err;
        }
    }
    runner_.expect_unchanged(before);
}

// While train wrote a checkpoint every step and kept one, most of these failed ("no such
// checkpoint", "cannot open"): 18 of the 24, in each of two runs.
TEST_F(BadReadersTest, ReadersOfARunThatRotatesItsCheckpoints) {
    TempDirectory scratch("mixgpt_readers_rotation");
    const std::string run = scratch.file("rotating");
    const pid_t train =
        spawn(runner_.substitute_all(train_with(
                  {"--steps", "1000000", "--checkpoint-interval", "1", "--keep-checkpoints", "1"}, run)),
              scratch.file("train_out.txt"), scratch.file("train_err.txt"));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (list_checkpoints(run + "/checkpoints").empty() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    for (int trial = 0; trial < 8; ++trial) {
        for (const std::vector<std::string>& reader : readers_of(run, scratch)) {
            SCOPED_TRACE(reader[0] + ", trial " + std::to_string(trial));
            const Outcome outcome = runner_.run(reader);
            EXPECT_EQ(outcome.exit_status, 0) << outcome.err;
        }
    }
    ::kill(train, SIGTERM);  // finishes its step, writes a checkpoint, exits 0
    const Outcome trained = wait_for(train, scratch.file("train_out.txt"), scratch.file("train_err.txt"),
                                     std::chrono::seconds(60));
    EXPECT_EQ(trained.exit_status, 0) << trained.err;
    EXPECT_EQ(list_checkpoints(run + "/checkpoints").size(), 1u);
}

// A link to a file not made yet: the link was replaced by a file of scores.
TEST_F(BadReadersTest, PerExampleWritesThroughADanglingLink) {
    TempDirectory scratch("mixgpt_readers_link");
    const std::string link = scratch.file("scores.jsonl");
    fs::create_symlink("made.jsonl", link);
    const Outcome outcome = runner_.run({"eval", "{D}/run", "--task", "mc", "--data", "{D}/task.jsonl",
                                         "--threads", "1", "--per-example", link});
    EXPECT_EQ(outcome.exit_status, 0) << outcome.err;
    EXPECT_TRUE(fs::is_symlink(link));
    EXPECT_EQ(lines_of(read_text(scratch.file("made.jsonl"))).size(), 1u);
}

}  // namespace
}  // namespace mixgpt
