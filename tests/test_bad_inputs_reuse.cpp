// Bad input, reuse family (issue 36): what a command finds already made is reused only when it
// is what the command asks for. A study started again keeps a run only when the run's recorded
// settings are the study's; prepare --append refuses settings that are not the dataset's and an
// input the dataset already holds; prepare --resume refuses an input whose content changed, and
// continues a killed prepare --force. Each
// case records every file of the fixture before it runs, and checks them all afterwards.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/bad_inputs_support.h"
#include "tokenizer/dataset_index.h"

namespace mixgpt {
namespace {

using namespace test;
namespace fs = std::filesystem;

// A one-precision study of two steps of the tiny model, into `output`; `extra` adds options or
// replaces the default of the same name.
std::vector<std::string> study_with(const std::vector<std::string>& extra, const std::string& output) {
    const std::vector<std::pair<std::string, std::string>> defaults = {{"--dataset", "{DATA}"},
                                                                       {"--precisions", "fp32"},
                                                                       {"--model", "d2"},
                                                                       {"--n-embd", "32"},
                                                                       {"-b", "4"},
                                                                       {"-t", "16"},
                                                                       {"--steps", "2"},
                                                                       {"--eval-interval", "1"},
                                                                       {"--bench-steps", "1"},
                                                                       {"--threads", "1"},
                                                                       {"-o", output}};
    std::vector<std::string> arguments = {"study"};
    for (const auto& [option, value] : defaults)
        if (std::find(extra.begin(), extra.end(), option) == extra.end())
            arguments.insert(arguments.end(), {option, value});
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    return arguments;
}

// prepare --append of `input` to {D}/grown (the fixture's dataset: seed 3, split 0.15,
// vocabulary 300), with `extra` options.
std::vector<std::string> append_with(const std::string& input, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> arguments = {"prepare", "--append", "--output", "{D}/grown", "--threads", "1"};
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    arguments.push_back(input);
    return arguments;
}

// JSON lines of `count` generated documents.
std::string jsonl_documents(int count, uint64_t seed) {
    std::string lines;
    for (const std::string& document : testing_support::generated_documents(count, seed))
        lines += nlohmann::json({{"text", document}}).dump() + "\n";
    return lines;
}

// A prepare of `input` into `output` with the fixture's tokenizer, a shard per document.
std::vector<std::string> shard_per_document(const std::string& output, const std::string& input,
                                            const std::string& flag = "") {
    std::vector<std::string> arguments = {"prepare",
                                          "--output",
                                          output,
                                          "--tokenizer",
                                          "{DATA}/tokenizer.model",
                                          "--val-fraction",
                                          "0",
                                          "--shard-tokens",
                                          "50",
                                          "--threads",
                                          "1",
                                          input};
    if (!flag.empty()) arguments.push_back(flag);
    return arguments;
}

// Starts `arguments` (substituted) and kills it with SIGKILL once the folder `folder_of(pid)` holds
// its third shard; removes the shard file it may have been writing then, and its lock file (which
// the next command there removes when it lets go): a prepare killed between two shards. Returns
// that folder.
std::string kill_after_two_shards(const BadInputRunner& runner, const std::vector<std::string>& arguments,
                                  const std::function<std::string(pid_t)>& folder_of,
                                  const TempDirectory& logs) {
    const pid_t pid = spawn(runner.substitute_all(arguments), logs.file("out.txt"), logs.file("err.txt"));
    const std::string folder = folder_of(pid);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!fs::exists(folder + "/shard-000002.h5") && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    for (const fs::directory_entry& entry : fs::directory_iterator(folder))
        if (entry.path().filename().string().find(".tmp-") != std::string::npos ||
            entry.path().filename() == "run.lock")
            fs::remove(entry.path());
    EXPECT_TRUE(fs::exists(folder + "/progress.json")) << "the prepare finished before it was killed";
    return folder;
}

class BadReuseTest : public ::testing::Test {
protected:
    // The common fixture, plus: study/ (a complete one-run study), data_copy/ (the dataset at
    // another path), placed/fp32/ (a plain bf16 run of the study's settings), grown/ (the dataset
    // with extra/'s documents appended), fresh/ (documents it does not hold yet), copy/ (a copy of
    // one of extra/'s files), other_data/ (fresh/ prepared), study_swapped/ (a study of
    // study_data/, a copy of the dataset), halfway/ (a prepare of edited/ killed between shards,
    // whose a.jsonl was then edited in place).
    static void SetUpTestSuite() {
        fixture_ = make_bad_input_fixture("mixgpt_bad_reuse").release();
        const TempDirectory& d = *fixture_;
        BadInputRunner runner(d);
        const Outcome study = runner.run(study_with({}, "{D}/study"), {}, std::chrono::seconds(300));
        ASSERT_EQ(study.exit_status, 0) << study.err;
        fs::copy(d.file("data"), d.file("data_copy"), fs::copy_options::recursive);
        const Outcome placed = runner.run(
            train_with({"--precision", "bf16", "--eval-interval", "1", "--checkpoint-interval", "1"},
                       "{D}/placed/fp32"));
        ASSERT_EQ(placed.exit_status, 0) << placed.err;
        const std::vector<std::string> documents = testing_support::generated_documents(60, 17);
        for (size_t i = 0; i < documents.size(); ++i)
            d.write((i < 30 ? "extra/doc" : "fresh/doc") + std::to_string(i) + ".txt", documents[i]);
        fs::copy(d.file("data"), d.file("grown"), fs::copy_options::recursive);
        const Outcome appended = runner.run(append_with("{D}/extra"));
        ASSERT_EQ(appended.exit_status, 0) << appended.err;
        const Outcome other =
            runner.run({"prepare", "--output", "{D}/other_data", "--tokenizer", "{DATA}/tokenizer.model",
                        "--val-fraction", "0.3", "--threads", "1", "{D}/fresh"});
        ASSERT_EQ(other.exit_status, 0) << other.err;
        fs::copy(d.file("data"), d.file("study_data"), fs::copy_options::recursive);
        const Outcome studied = runner.run(study_with({"--dataset", "{D}/study_data"}, "{D}/study_swapped"),
                                           {}, std::chrono::seconds(300));
        ASSERT_EQ(studied.exit_status, 0) << studied.err;
        fs::create_directories(d.file("copy"));
        fs::copy(d.file("extra/doc0.txt"), d.file("copy/doc0_again.txt"));

        const std::string lines = jsonl_documents(400, 23);
        d.write("edited/a.jsonl", lines);
        TempDirectory logs("mixgpt_bad_reuse_logs");
        kill_after_two_shards(
            runner, shard_per_document("{D}/halfway", "{D}/edited"), [&](pid_t) { return d.file("halfway"); },
            logs);
        std::fstream edited(d.file("edited/a.jsonl"), std::ios::in | std::ios::out | std::ios::binary);
        edited.seekp(10);  // the first character of the first document's text
        edited.put(lines[10] == 'Q' ? 'Z' : 'Q');
    }
    static void TearDownTestSuite() {
        delete fixture_;
        fixture_ = nullptr;
    }

    static inline TempDirectory* fixture_ = nullptr;
    BadInputRunner runner_{*fixture_};
};

// A study started again reported its old runs under the new settings' heading.
TEST_F(BadReuseTest, StudyKeepsOnlyRunsOfItsSettings) {
    const std::vector<BadInput> cases = {
        {"another --lr", study_with({"--lr", "0.001"}, "{D}/study"), 1, {"{D}/study/fp32: its run has lr "}},
        {"another --arch",
         study_with({"--arch", "llama"}, "{D}/study"),
         1,
         {"{D}/study/fp32: its run has arch "}},
        {"another --dataset",
         study_with({"--dataset", "{D}/data_copy"}, "{D}/study"),
         1,
         {"{D}/study/fp32: its run has dataset {DATA}, this study asks for {D}/data_copy"}},
        {"a plain bf16 run at <study>/fp32",
         study_with({}, "{D}/placed"),
         1,
         {"{D}/placed/fp32: its run has precision bf16, this study asks for fp32"}},
    };
    for (const BadInput& bad : cases) runner_.check(bad);
}

// A study started again on another dataset placed at the same path kept the runs of the old one.
TEST_F(BadReuseTest, StudyKeepsOnlyRunsOfItsDataset) {
    fs::remove_all(fixture_->file("study_data"));
    fs::copy(fixture_->file("other_data"), fixture_->file("study_data"), fs::copy_options::recursive);
    runner_.check(
        {"another dataset at the study's --dataset path",
         study_with({"--dataset", "{D}/study_data"}, "{D}/study_swapped"),
         1,
         {"{D}/study_swapped/fp32: its run was trained on another dataset than the one at {D}/study_data"}});
}

// prepare --append took the options the dataset was made with from the dataset, silently, and
// appended documents the dataset already held.
TEST_F(BadReuseTest, AppendRefusesWhatIsNotTheDatasets) {
    const std::vector<BadInput> cases = {
        {"another --val-fraction",
         append_with("{D}/fresh", {"--val-fraction", "0.3"}),
         1,
         {"{D}/grown: --val-fraction 0.3 is not the dataset's (0.15)"}},
        {"another --seed",
         append_with("{D}/fresh", {"--seed", "4"}),
         1,
         {"{D}/grown: --seed 4 is not the dataset's (3)"}},
        {"another --vocab-size",
         append_with("{D}/fresh", {"--vocab-size", "400"}),
         1,
         {"{D}/grown: --vocab-size 400 is not the dataset's (300)"}},
        {"an input appended already",
         append_with("{D}/extra"),
         1,
         {"{D}/extra/doc0.txt: already in {D}/grown"}},
        {"a copy of an input appended already",
         append_with("{D}/copy"),
         1,
         {"{D}/copy/doc0_again.txt: already in {D}/grown"}},
    };
    for (const BadInput& bad : cases) runner_.check(bad);
}

// prepare --resume, after an input was edited in place without changing its size, went on from
// the recorded position: the dataset held documents of the old text and of the new.
TEST_F(BadReuseTest, ResumeRefusesAnInputWhoseContentChanged) {
    runner_.check({"an input edited in place, same size",
                   shard_per_document("{D}/halfway", "{D}/edited", "--resume"),
                   1,
                   {"{D}/edited/a.jsonl: its content changed since the unfinished prepare read it"}});
}

// prepare --force killed, then --resume: "the dataset is complete, nothing to resume", the old
// dataset kept and the half-built one removed as a stale temporary.
TEST_F(BadReuseTest, ResumeContinuesAKilledForce) {
    TempDirectory scratch("mixgpt_reuse_force");
    const std::string corpus = scratch.write("corpus.jsonl", jsonl_documents(400, 29));
    ASSERT_EQ(runner_.run(shard_per_document(scratch.file("reference"), corpus)).exit_status, 0);
    const std::string forced = scratch.file("forced");
    fs::copy(fixture_->file("data"), forced, fs::copy_options::recursive);
    const std::string work = kill_after_two_shards(
        runner_, shard_per_document(forced, corpus, "--force"),
        [&](pid_t pid) { return forced + ".tmp-" + std::to_string(pid); }, scratch);

    const Outcome resumed = runner_.run(shard_per_document(forced, corpus, "--resume"));
    EXPECT_EQ(resumed.exit_status, 0) << resumed.err;
    EXPECT_NE(resumed.err.find(forced + ": continuing the --force run that was stopped in " + work),
              std::string::npos)
        << resumed.err;
    const DatasetIndex made = read_index(forced + "/index.json");
    const DatasetIndex reference = read_index(scratch.file("reference/index.json"));
    ASSERT_EQ(made.shards.size(), reference.shards.size());
    for (size_t i = 0; i < made.shards.size(); ++i)
        EXPECT_EQ(made.shards[i].sha256, reference.shards[i].sha256) << made.shards[i].file;
    EXPECT_FALSE(fs::exists(work));
}

}  // namespace
}  // namespace mixgpt
