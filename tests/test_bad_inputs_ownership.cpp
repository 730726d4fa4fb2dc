// Bad input, ownership family (issue 36): mixgpt removes, moves or replaces only what it made.
// train --overwrite moves a run, never a folder of other files; a single-file output is never an
// input, and a device, a pipe or standard output is written through, never replaced; the sweep of
// stale temporaries beside an output (prepare, export, import) spares a user's folders named like
// one and the command's own inputs; prepare --force never takes the inputs it reads with the
// dataset it replaces; two prepares into one new folder never mix. Each case records every file
// there before it runs, and checks them all afterwards.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "tests/bad_inputs_support.h"
#include "tokenizer/dataset_index.h"

namespace mixgpt {
namespace {

using namespace test;
namespace fs = std::filesystem;

class BadOwnershipTest : public ::testing::Test {
protected:
    // The common fixture, plus hf/ (run/ exported), a project folder holding a run beside the
    // user's own files, and a copy of the dataset holding a run.
    static void SetUpTestSuite() {
        fixture_ = make_bad_input_fixture("mixgpt_bad_ownership").release();
        const TempDirectory& d = *fixture_;
        BadInputRunner runner(d);
        ASSERT_EQ(runner.run({"export", "{D}/run", "-o", "{D}/hf"}).exit_status, 0);
        for (const char* name : {"task.jsonl", "scored_task.jsonl"})
            d.write(name, "{\"context\": \"the cat\", \"choices\": [\"sees\", \"likes\"], \"label\": 0}\n");
        fs::copy(d.file("run"), d.file("project"), fs::copy_options::recursive);
        d.write("project/notes.txt", "the user's notes\n");
        d.write("project/src/main.cpp", "int main() { return 0; }\n");
        fs::copy(d.file("data"), d.file("dataset_with_run"), fs::copy_options::recursive);
        fs::copy(d.file("run"), d.file("dataset_with_run"),
                 fs::copy_options::recursive | fs::copy_options::skip_existing);
    }
    static void TearDownTestSuite() {
        delete fixture_;
        fixture_ = nullptr;
    }

    // Runs `arguments`; expects `status`, and every file that was in the fixture or in `scratch`
    // before to be there after, unchanged (a command that succeeds adds its output).
    Outcome run_keeping(const std::vector<std::string>& arguments, int status, const TempDirectory& scratch) {
        const std::map<std::string, std::string> fixture_before = file_hashes(fixture_->path());
        const std::map<std::string, std::string> scratch_before = file_hashes(scratch.path());
        const Outcome outcome = runner_.run(arguments);
        EXPECT_FALSE(outcome.hung);
        EXPECT_EQ(outcome.exit_status, status) << outcome.err;
        if (status != 0) {
            std::string line;
            EXPECT_TRUE(is_one_error_line(outcome.err, line));
        }
        expect_kept(fixture_before);
        expect_kept(scratch_before);
        return outcome;
    }

    static void expect_kept(const std::map<std::string, std::string>& before) {
        for (const auto& [path, hash] : before)
            EXPECT_TRUE(fs::exists(path) && sha256_file_hex(path) == hash) << path << " changed or removed";
    }

    static inline TempDirectory* fixture_ = nullptr;
    BadInputRunner runner_{*fixture_};
};

// train --overwrite moved everything in the folder into replaced-<time>/: a project's sources and
// notes, a dataset.
TEST_F(BadOwnershipTest, OverwriteMovesOnlyARun) {
    TempDirectory scratch("mixgpt_ownership_overwrite");
    {
        SCOPED_TRACE("train --overwrite into a project folder holding a run");
        const Outcome outcome = run_keeping(train_with({"--overwrite"}, "{D}/project"), 1, scratch);
        EXPECT_NE(outcome.err.find(fixture_->file("project") + ": holds "), std::string::npos) << outcome.err;
        EXPECT_NE(outcome.err.find("not part of a run"), std::string::npos) << outcome.err;
    }
    {
        SCOPED_TRACE("train --overwrite into a dataset folder holding a run");
        const Outcome outcome = run_keeping(train_with({"--overwrite"}, "{D}/dataset_with_run"), 1, scratch);
        EXPECT_NE(outcome.err.find(fixture_->file("dataset_with_run") + ": holds "), std::string::npos)
            << outcome.err;
    }
    for (const char* folder : {"project", "dataset_with_run"})
        for (const fs::directory_entry& entry : fs::directory_iterator(fixture_->file(folder)))
            EXPECT_NE(entry.path().filename().string().rfind("replaced-", 0), 0u) << entry.path();
}

// train -o aimed at the dataset it trains on (or a folder inside it) wrote its checkpoints among the
// shards, and --overwrite then had the dataset's files to reckon with.
TEST_F(BadOwnershipTest, RunIsNeverWrittenIntoItsOwnDataset) {
    TempDirectory scratch("mixgpt_ownership_run_in_dataset");
    for (const char* output : {"{D}/data", "{D}/data/run"}) {
        SCOPED_TRACE(output);
        const Outcome outcome = run_keeping(train_with({"--overwrite"}, output), 1, scratch);
        EXPECT_NE(outcome.err.find("lies in the dataset " + fixture_->file("data")), std::string::npos)
            << outcome.err;
        EXPECT_FALSE(fs::exists(fixture_->file("data/checkpoints")));
        EXPECT_FALSE(fs::exists(fixture_->file("data/run")));
    }
}

// eval --per-example and bench --json-out renamed their file over the path: over the task file or
// a file of the evaluated run, over a device (as root), over a link to standard output.
TEST_F(BadOwnershipTest, SingleFileOutputsAreNeverRenamedOverWhatIsNotAFile) {
    TempDirectory scratch("mixgpt_ownership_outputs");
    const auto eval = [](const std::string& task, const std::string& per_example) {
        return std::vector<std::string>{"eval",      "{D}/run", "--task",        "mc",       "--data", task,
                                        "--threads", "1",       "--per-example", per_example};
    };
    {
        SCOPED_TRACE("eval --per-example onto the task file");
        const Outcome outcome =
            run_keeping(eval("{D}/scored_task.jsonl", "{D}/scored_task.jsonl"), 1, scratch);
        EXPECT_NE(outcome.err.find(fixture_->file("scored_task.jsonl") + ": is an input of this command"),
                  std::string::npos)
            << outcome.err;
    }
    // Not inputs of eval, but the run's own history: replaced without a word.
    for (const char* run_file : {"metrics.jsonl", "run_id", "checkpoints/step_00000002.h5"}) {
        SCOPED_TRACE(std::string("eval --per-example onto the run's ") + run_file);
        const Outcome outcome = run_keeping(eval("{D}/task.jsonl", "{D}/run/" + std::string(run_file)), 1, scratch);
        EXPECT_NE(outcome.err.find("an output never replaces"), std::string::npos) << outcome.err;
    }
    const std::string stdout_link = scratch.file("stdout");
    fs::create_symlink("/proc/self/fd/1", stdout_link);
    {
        SCOPED_TRACE("eval --per-example onto a link to standard output");
        const Outcome outcome = run_keeping(eval("{D}/task.jsonl", stdout_link), 0, scratch);
        EXPECT_TRUE(fs::is_symlink(stdout_link));
        EXPECT_NE(outcome.out.find("\"choice_norm\""), std::string::npos) << outcome.out;
    }
    {
        SCOPED_TRACE("bench --json-out onto a link to standard output");
        const Outcome outcome = run_keeping(
            {"bench", "--model",   "d2", "--n-embd",   "32",       "--vocab-size",   "100", "-b",
             "1",     "-t",        "8",  "--steps",    "1",        "--warmup-steps", "0",   "--precision",
             "fp32",  "--threads", "1",  "--json-out", stdout_link},
            0, scratch);
        EXPECT_TRUE(fs::is_symlink(stdout_link));
        EXPECT_NE(outcome.out.find("\"tokens_per_second\""), std::string::npos) << outcome.out;
    }
    const std::string full = scratch.file("full");
    if (::mknod(full.c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0)
        GTEST_SKIP() << "cannot make a device node here (needs root): the /dev/full case not run";
    {
        SCOPED_TRACE("eval --per-example onto a full device");
        const Outcome outcome = run_keeping(eval("{D}/task.jsonl", full), 1, scratch);
        EXPECT_NE(outcome.err.find(full + ": cannot write (No space left on device)"), std::string::npos)
            << outcome.err;
        EXPECT_TRUE(fs::is_character_file(full));
    }
}

// prepare with the fixture's tokenizer, all documents in the training split: quick.
std::vector<std::string> quick_prepare(const std::string& output, const std::string& input) {
    return {"prepare",        "--output", output,      "--tokenizer", "{DATA}/tokenizer.model",
            "--val-fraction", "0",        "--threads", "1",           input};
}

// The sweep of stale temporaries removed, recursively, every sibling "<output>.old-N" and
// "<output>.tmp-N" whose N was no live process: the user's backup, the user's folder, the command's
// own input.
TEST_F(BadOwnershipTest, StaleTemporarySweepSparesWhatIsNotOurs) {
    TempDirectory scratch("mixgpt_ownership_sweep");
    const std::string dead = std::to_string(gone_pid());
    scratch.write("web.old-" + dead + "/notes.txt", "the user's backup\n");
    scratch.write("books.tmp-" + dead + "/chapter1.txt", "It was a dark and stormy night.\n");
    fs::copy(fixture_->file("run"), scratch.file("model.tmp-" + dead), fs::copy_options::recursive);
    scratch.write("hf.tmp-" + dead + "/notes.txt", "the user's folder\n");
    fs::copy(fixture_->file("hf"), scratch.file("import.tmp-" + dead), fs::copy_options::recursive);
    {
        SCOPED_TRACE("prepare beside a backup <output>.old-N");
        run_keeping(quick_prepare(scratch.file("web"), "{D}/corpus"), 0, scratch);
    }
    {
        SCOPED_TRACE("prepare of an input named <output>.tmp-N");
        run_keeping(quick_prepare(scratch.file("books"), scratch.file("books.tmp-" + dead)), 0, scratch);
    }
    {
        SCOPED_TRACE("export of a run named <output>.tmp-N");
        run_keeping({"export", scratch.file("model.tmp-" + dead), "-o", scratch.file("model")}, 0, scratch);
    }
    {
        SCOPED_TRACE("export beside a folder <output>.tmp-N");
        run_keeping({"export", "{D}/run", "-o", scratch.file("hf")}, 0, scratch);
    }
    {
        SCOPED_TRACE("import of a folder named <output>.tmp-N");
        run_keeping({"import", scratch.file("import.tmp-" + dead), "-o", scratch.file("import")}, 0, scratch);
    }
}

// prepare --output books 'books/*.txt' --force replaced the folder, books and all, with a dataset
// made of them (and of the old index.json, read as a document).
TEST_F(BadOwnershipTest, PrepareForceNeverReplacesItsInputs) {
    TempDirectory scratch("mixgpt_ownership_books");
    fs::copy(fixture_->file("data"), scratch.file("books"), fs::copy_options::recursive);
    for (const fs::directory_entry& entry : fs::directory_iterator(fixture_->file("corpus")))
        fs::copy(entry.path(), scratch.file("books") / entry.path().filename());
    std::vector<std::string> arguments = quick_prepare(scratch.file("books"), scratch.file("books/*.txt"));
    arguments.push_back("--force");
    const Outcome outcome = run_keeping(arguments, 1, scratch);
    EXPECT_NE(
        outcome.err.find(scratch.file("books") + ": holds the input " + scratch.file("books/doc1000.txt")),
        std::string::npos)
        << outcome.err;
}

// JSON lines of `count` documents of made-up words: a corpus on which a tokenizer of 2000 tokens
// trains for most of a second.
std::string varied_documents(int count) {
    static const char* const kSyllables[] = {"ka", "lo", "mi", "ne", "ru", "sa",  "ti",  "vo",  "ze",  "qu",
                                             "an", "el", "is", "or", "um", "bra", "cle", "dri", "fro", "glu"};
    std::mt19937_64 random(5);
    std::string lines;
    for (int d = 0; d < count; ++d) {
        std::string text;
        for (int w = 0; w < 80; ++w) {
            for (int s = 0, syllables = 1 + static_cast<int>(random() % 4); s < syllables; ++s)
                text += kSyllables[random() % 20];
            text += w + 1 < 80 ? " " : ".\n";
        }
        lines += nlohmann::json({{"text", text}}).dump() + "\n";
    }
    return lines;
}

// Two prepares into one new folder, the second started half a second after the first: both
// finished, leaving an index of one, the tokenizer of the other and shards of both.
TEST_F(BadOwnershipTest, SecondPrepareIntoTheSameNewFolderIsRefused) {
    TempDirectory scratch("mixgpt_ownership_two_prepares");
    const std::string corpus = scratch.write("corpus.jsonl", varied_documents(1200));
    const std::string output = scratch.file("web");
    const auto prepare = [&](const std::string& vocab_size) {  // two tokenizers: a mix shows
        return std::vector<std::string>{
            "prepare", "--output",  output, "--vocab-size", vocab_size, "--shard-tokens",
            "100000",  "--threads", "1",    corpus};
    };
    const pid_t first = spawn(prepare("2000"), scratch.file("out1"), scratch.file("err1"));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const pid_t second = spawn(prepare("1900"), scratch.file("out2"), scratch.file("err2"));
    const Outcome outcomes[2] = {wait_for(first, scratch.file("out1"), scratch.file("err1")),
                                 wait_for(second, scratch.file("out2"), scratch.file("err2"))};
    EXPECT_EQ(outcomes[0].exit_status, 0) << outcomes[0].err;
    EXPECT_EQ(outcomes[1].exit_status, 1) << outcomes[1].err;
    std::string line;
    EXPECT_TRUE(is_one_error_line(outcomes[1].err, line));
    EXPECT_NE(line.find(output + ": in use by process " + std::to_string(first)), std::string::npos) << line;
    const DatasetIndex index = read_index(output + "/index.json");
    EXPECT_EQ(index.tokenizer.sha256, sha256_file_hex(output + "/tokenizer.model"));
    size_t shard_files = 0;
    for (const fs::directory_entry& entry : fs::directory_iterator(output))
        shard_files += entry.path().filename().string().rfind("shard-", 0) == 0;
    EXPECT_EQ(shard_files, index.shards.size());
    for (const ShardRecord& shard : index.shards)
        EXPECT_EQ(sha256_file_hex(output + "/" + shard.file), shard.sha256) << shard.file;
}

}  // namespace
}  // namespace mixgpt
