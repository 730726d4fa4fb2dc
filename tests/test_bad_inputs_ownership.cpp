// Bad input, ownership family (issue 36): mixgpt removes, moves or replaces only what it made.
// train --overwrite moves a run, never a folder of other files; a single-file output is never an
// input, and a device, a pipe or standard output is written through, never replaced. Each case
// records every file there before it runs, and checks them all afterwards.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <filesystem>

#include "tests/bad_inputs_support.h"

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

// eval --per-example and bench --json-out renamed their file over the path: over the task file,
// over a device (as root), over a link to standard output.
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

}  // namespace
}  // namespace mixgpt
