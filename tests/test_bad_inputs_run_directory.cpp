// Bad input, run-directory family (issue 31): nothing may destroy or mix a run directory by
// accident. A fresh start into a run, --resume without a valid checkpoint, a second writer (two
// real processes), checkpoint rotation across lineages, --overwrite, and export/import --force
// aimed at their own inputs, at a file or at a run in use; and their temporaries after SIGTERM or
// kill -9. Cases are checked as tests/bad_inputs_support.h says.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "core/directory_lock.h"
#include "core/owned_temporary.h"
#include "model/parameters.h"
#include "tests/bad_inputs_support.h"

namespace mixgpt {
namespace {

using namespace test;
namespace fs = std::filesystem;

class BadRunDirectoryTest : public ::testing::Test {
protected:
    // The common fixture, plus run2/ (another run, another lineage), damaged_run/ (its only
    // checkpoint truncated), hf/ (run/ exported) and plain_file.
    static void SetUpTestSuite() {
        fixture_ = make_bad_input_fixture("mixgpt_bad_run_directory").release();
        const TempDirectory& d = *fixture_;
        BadInputRunner runner(d);
        ASSERT_EQ(runner.run(train_with({"--seed", "7"}, "{D}/run2")).exit_status, 0);
        ASSERT_EQ(runner.run({"export", "{D}/run", "-o", "{D}/hf"}).exit_status, 0);
        fs::create_directories(d.file("damaged_run/checkpoints"));
        fs::copy(d.file("run/metrics.jsonl"), d.file("damaged_run/metrics.jsonl"));
        const std::string damaged = d.file("damaged_run/checkpoints/step_00000002.h5");
        fs::copy(d.file("run/checkpoints/step_00000002.h5"), damaged);
        fs::resize_file(damaged, fs::file_size(damaged) / 2);
        fs::create_directories(d.file("empty_dir"));
        d.write("plain_file", "a file where a folder is meant\n");
    }
    static void TearDownTestSuite() {
        delete fixture_;
        fixture_ = nullptr;
    }

    static inline TempDirectory* fixture_ = nullptr;
    BadInputRunner runner_{*fixture_};
};

std::vector<BadInput> run_directory_cases() {
    const std::string ckpt = "{D}/run/checkpoints/step_00000002.h5";
    const std::string other = "{D}/run2/checkpoints/step_00000002.h5";
    return {
        {"train: fresh start into a run directory",
         train_with({}, "{D}/run"),
         1,
         {"{D}/run: holds another run", "checkpoints/ (1 file)", "metrics.jsonl", "--resume", "--overwrite"}},
        {"train: --resume FILE of another run into a run directory",
         train_with({"--resume", other}, "{D}/run"),
         1,
         {"{D}/run: holds another run", other, "--overwrite"}},
        {"train: --resume in an empty directory",
         train_with({"--resume"}, "{D}/empty_dir"),
         1,
         {"{D}/empty_dir/checkpoints: no checkpoint to resume from", "--resume if-present"}},
        {"train: --resume where every checkpoint is damaged",
         train_with({"--resume"}, "{D}/damaged_run"),
         1,
         {"none of the 1 checkpoints in {D}/damaged_run/checkpoints is valid", "left as they are"}},
        {"train: --resume if-present where every checkpoint is damaged",
         train_with({"--resume", "if-present"}, "{D}/damaged_run"),
         1,
         {"none of the 1 checkpoints", "is valid"}},
        {"train: --resume FILE that is missing",
         train_with({"--resume", "{D}/absent.h5"}),
         1,
         {"{D}/absent.h5"}},
        {"train: --overwrite with --resume",
         train_with({"--overwrite", "--resume"}, "{D}/run"),
         1,
         {"overwrite", "--resume"}},
        {"train: --overwrite moving aside the checkpoint to resume",
         train_with({"--overwrite", "--resume", ckpt}, "{D}/run"),
         1,
         {"overwrite", ckpt, "it would move aside"}},
        {"export: -o the run exported, --force",
         {"export", "{D}/run", "-o", "{D}/run", "--force"},
         1,
         {"{D}/run: is the input {D}/run", "choose another -o"}},
        {"export: -o a parent of the run, --force",
         {"export", "{D}/run", "-o", "{D}", "--force"},
         1,
         {"{D}: contains the input"}},
        {"export: -o the folder of the checkpoint file, --force",
         {"export", ckpt, "-o", "{D}/run/checkpoints", "--force"},
         1,
         {"{D}/run/checkpoints: contains the input", ckpt}},
        {"export: -o the tokenizer's folder, --force",
         {"export", "{D}/run", "-o", "{DATA}", "--force"},
         1,
         {"{DATA}: contains the input {DATA}/tokenizer.model"}},
        {"export: -o a regular file, --force",
         {"export", "{D}/run", "-o", "{D}/plain_file", "--force"},
         1,
         {"{D}/plain_file: is a file, not a folder", "--force replaces only a folder"}},
        {"export: -o a non-empty folder without --force",
         {"export", "{D}/run", "-o", "{D}/corpus"},
         1,
         {"{D}/corpus: exists and is not empty (--force replaces it)"}},
        {"export: --reference-out the run, --force",
         {"export", "{D}/run", "-o", "{D}/new_hf", "--reference-out", "{D}/run", "--force"},
         1,
         {"{D}/run: is the input {D}/run", "--reference-out"}},
        {"export: --reference-out a non-empty folder without --force",
         {"export", "{D}/run", "-o", "{D}/new_hf", "--reference-out", "{D}/corpus"},
         1,
         {"{D}/corpus: exists and is not empty"}},
        {"import: -o the folder imported, --force",
         {"import", "{D}/hf", "-o", "{D}/hf", "--force"},
         1,
         {"{D}/hf: is the input {D}/hf"}},
        {"import: -o a parent of the folder, --force",
         {"import", "{D}/hf", "-o", "{D}", "--force"},
         1,
         {"{D}: contains the input {D}/hf"}},
        {"import: -o a regular file, --force",
         {"import", "{D}/hf", "-o", "{D}/plain_file", "--force"},
         1,
         {"{D}/plain_file: is a file, not a folder"}},
        {"import: -o a run directory without --force",
         {"import", "{D}/hf", "-o", "{D}/run2"},
         1,
         {"{D}/run2: exists and is not empty"}},
    };
}

TEST_F(BadRunDirectoryTest, EveryCaseIsOneLineAndDamagesNothing) {
    const std::vector<BadInput> cases = run_directory_cases();
    for (const BadInput& bad : cases) runner_.check(bad);
    EXPECT_EQ(cases.size(), 20u);
}

// A directory locked by a process (here: this one) is refused by every writer, --force or not.
TEST_F(BadRunDirectoryTest, LockedRunDirectoryIsRefusedByEveryWriter) {
    const DirectoryLock lock(fixture_->file("locked"));
    const std::string holder = "in use by process " + std::to_string(::getpid()) + " on ";
    for (const BadInput& bad : std::vector<BadInput>{
             {"train into a locked directory", train_with({}, "{D}/locked"), 1, {"{D}/locked: " + holder}},
             {"train --resume into a locked directory", train_with({"--resume"}, "{D}/locked"), 1, {holder}},
             {"export -o a locked directory, --force",
              {"export", "{D}/run", "-o", "{D}/locked", "--force"},
              1,
              {"{D}/locked: a run directory " + holder}},
             {"import -o a locked directory, --force",
              {"import", "{D}/hf", "-o", "{D}/locked", "--force"},
              1,
              {"{D}/locked: a run directory " + holder}},
         })
        runner_.check(bad);
}

// Two real `mixgpt train` processes on one directory: the second fails in one line naming the
// first's pid; the first, stopped by SIGTERM, writes its checkpoint and a metrics file of whole
// JSON lines.
TEST_F(BadRunDirectoryTest, SecondWriterIsRefusedWhileTheFirstRuns) {
    TempDirectory scratch("mixgpt_two_writers");
    const std::string run = scratch.file("run");
    const pid_t first = spawn(runner_.substitute_all(train_with({"--steps", "10000000"}, run)),
                              scratch.file("out1"), scratch.file("err1"));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (read_text(DirectoryLock::file_of(run)).rfind("pid " + std::to_string(first) + " ", 0) != 0 &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const Outcome second = runner_.run(train_with({"--resume", "if-present"}, run));
    std::string line;
    EXPECT_EQ(second.exit_status, 1) << second.err;
    EXPECT_TRUE(is_one_error_line(second.err, line));
    EXPECT_NE(line.find(run + ": in use by process " + std::to_string(first) + " on "), std::string::npos)
        << line;
    // SIGTERM once the first is in its training loop (its first metrics line is written there, after
    // its signal handlers are installed): before, while it still loads, the signal's default ends it.
    while (lines_of(read_text(run + "/metrics.jsonl")).empty() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ::kill(first, SIGTERM);
    const Outcome stopped =
        wait_for(first, scratch.file("out1"), scratch.file("err1"), std::chrono::seconds(60));
    EXPECT_EQ(stopped.exit_status, 0) << stopped.err;
    EXPECT_NE(stopped.out.find("stopped by a signal"), std::string::npos) << stopped.out;
    EXPECT_FALSE(fs::exists(DirectoryLock::file_of(run)));  // released, and removed
    for (const std::string& metrics_line : lines_of(read_text(run + "/metrics.jsonl")))
        EXPECT_TRUE(nlohmann::json::accept(metrics_line)) << metrics_line;
    EXPECT_EQ(list_checkpoints(run + "/checkpoints").size(), 1u);
}

// --overwrite moves the previous run into replaced-<time>/, byte for byte, and says where.
TEST_F(BadRunDirectoryTest, OverwriteMovesThePreviousRunAsideAndSaysWhere) {
    TempDirectory scratch("mixgpt_overwrite");
    const std::string run = scratch.file("run");
    fs::copy(fixture_->file("run"), run, fs::copy_options::recursive);
    const std::map<std::string, std::string> before = file_hashes(run);
    const Outcome outcome = runner_.run(train_with({"--overwrite", "--steps", "3"}, run));
    ASSERT_EQ(outcome.exit_status, 0) << outcome.err;
    std::smatch moved;
    const std::string err = outcome.err;
    ASSERT_TRUE(std::regex_search(err, moved,
                                  std::regex("moved the previous run in \\S+ to (\\S+/replaced-[0-9-]+)")))
        << err;
    const std::string aside = moved[1].str();
    for (const auto& [path, hash] : before) {
        const std::string relative = fs::relative(path, run).string();
        EXPECT_EQ(sha256_file_hex(aside + "/" + relative), hash) << relative;
    }
    EXPECT_EQ(list_checkpoints(run + "/checkpoints"),
              std::vector<std::string>{checkpoint_path(run + "/checkpoints", 3)});
}

// Rotation keeps to its lineage: checkpoints of another run (here copied in, at a lower and a
// higher step) are never removed, and --keep-checkpoints 1 never removes the checkpoint just reported (it
// did: it kept the foreign step 100 as "the newest" and deleted the run's own final one).
TEST_F(BadRunDirectoryTest, RotationTouchesOnlyItsLineageAndKeepsWhatItReported) {
    TempDirectory scratch("mixgpt_rotation");
    const std::string run = scratch.file("run");
    fs::copy(fixture_->file("run"), run, fs::copy_options::recursive);
    const std::string foreign = checkpoint_path(run + "/checkpoints", 100);
    const std::string older_foreign = checkpoint_path(run + "/checkpoints", 1);
    for (const std::string& path : {foreign, older_foreign})
        fs::copy(fixture_->file("run2/checkpoints/step_00000002.h5"), path);
    const std::string foreign_hash = sha256_file_hex(foreign);
    const Outcome outcome =
        runner_.run(train_with({"--resume", checkpoint_path(run + "/checkpoints", 2), "--steps", "4",
                                "--checkpoint-interval", "1", "--keep-checkpoints", "1"},
                               run));
    ASSERT_EQ(outcome.exit_status, 0) << outcome.err;
    const std::string reported = checkpoint_path(run + "/checkpoints", 4);
    EXPECT_NE(outcome.out.find("last checkpoint " + reported), std::string::npos) << outcome.out;
    EXPECT_EQ(list_checkpoints(run + "/checkpoints"),
              (std::vector<std::string>{older_foreign, reported, foreign}));
    EXPECT_EQ(sha256_file_hex(foreign), foreign_hash);
    EXPECT_EQ(sha256_file_hex(older_foreign), foreign_hash);
    EXPECT_EQ(read_checkpoint(reported).run_id,
              read_checkpoint(checkpoint_path(fixture_->file("run/checkpoints"), 2)).run_id);
}

// The requeue idiom: --resume if-present starts from scratch where there is no checkpoint.
TEST_F(BadRunDirectoryTest, ResumeIfPresentStartsAFreshRunInAnEmptyDirectory) {
    TempDirectory scratch("mixgpt_if_present");
    const Outcome outcome = runner_.run(train_with({"--resume", "if-present"}, scratch.file("run")));
    ASSERT_EQ(outcome.exit_status, 0) << outcome.err;
    EXPECT_NE(outcome.err.find("starting from scratch (--resume if-present)"), std::string::npos)
        << outcome.err;
    EXPECT_EQ(list_checkpoints(scratch.file("run/checkpoints")).size(), 1u);
}

// kill -9 (or a second SIGTERM) leaves <out>.tmp-<pid> and <out>.replaced.tmp-<pid>, marked as
// theirs: the next export or import to the same place removes them, and nothing else.
TEST_F(BadRunDirectoryTest, TemporariesOfAKilledExportOrImportAreRemovedNextTime) {
    TempDirectory scratch("mixgpt_stale_staging");
    ProcessIdentity writer = ProcessIdentity::self();
    const std::string alive = std::to_string(writer.pid);
    writer.pid = gone_pid();
    const std::string dead = std::to_string(writer.pid);
    for (const auto& [command, output] :
         {std::pair<std::vector<std::string>, std::string>{{"export", "{D}/run"}, scratch.file("hf")},
          {{"import", "{D}/hf"}, scratch.file("imported")}}) {
        for (const std::string& stale : {output + ".tmp-" + dead, output + ".replaced.tmp-" + dead}) {
            const std::string name = fs::path(stale).filename().string();
            scratch.write(name + "/model.safetensors", "half written");
            scratch.write(name + "/" + kTemporaryMarkerName, temporary_marker_text(command[0], writer));
        }
        const std::string live = fs::path(output).filename().string() + ".tmp-" + alive;
        scratch.write(live + "/keep", "a live writer's");
        scratch.write(live + "/" + kTemporaryMarkerName,
                      temporary_marker_text(command[0], ProcessIdentity::self()));
        std::vector<std::string> arguments = command;
        arguments.insert(arguments.end(), {"-o", output});
        const Outcome outcome = runner_.run(arguments);
        ASSERT_EQ(outcome.exit_status, 0) << outcome.err;
        EXPECT_FALSE(fs::exists(output + ".tmp-" + dead));
        EXPECT_FALSE(fs::exists(output + ".replaced.tmp-" + dead));
        EXPECT_TRUE(fs::exists(output + ".tmp-" + alive + "/keep"));
        EXPECT_NE(outcome.err.find("removed " + output + ".tmp-" + dead), std::string::npos) << outcome.err;
    }
}

// A checkpoint of a larger model (4 layers, width 128: 0.8M parameters), so that an export or
// import spends most of its time after its signal handler is installed.
std::string write_larger_checkpoint(const TempDirectory& fixture, const TempDirectory& scratch) {
    Checkpoint checkpoint = read_checkpoint(fixture.file("run/checkpoints/step_00000002.h5"));
    checkpoint.config.n_layer = 4;
    checkpoint.config.n_head = 4;
    checkpoint.config.n_embd = 128;
    const ParameterLayout layout(checkpoint.config);
    checkpoint.parameters = init_parameters(checkpoint.config, layout, 1);
    checkpoint.adam_m.assign(checkpoint.parameters.size(), 0.f);
    checkpoint.adam_v.assign(checkpoint.parameters.size(), 0.f);
    const std::string path = checkpoint_path(scratch.file("big/checkpoints"), 2);
    write_checkpoint(path, checkpoint);
    return path;
}

// SIGTERM at moments spread over an export's or import's duration: the output is complete or
// absent, no temporary is left, and a signal that arrives while the work runs ends it in one line.
TEST_F(BadRunDirectoryTest, SigtermDuringExportOrImportLeavesNoTemporaries) {
    TempDirectory scratch("mixgpt_sigterm_export");
    const std::string checkpoint = write_larger_checkpoint(*fixture_, scratch);
    int stopped_mid_way = 0;
    for (const bool exporting : {true, false}) {
        const auto arguments = [&](const std::string& output) {
            return exporting ? std::vector<std::string>{"export", checkpoint, "-o", output}
                             : std::vector<std::string>{"import", scratch.file("hf"), "-o", output};
        };
        const auto started = std::chrono::steady_clock::now();
        ASSERT_EQ(runner_.run(arguments(scratch.file(exporting ? "hf" : "imported"))).exit_status, 0);
        const auto duration = std::chrono::steady_clock::now() - started;
        for (int trial = 0; trial < 5; ++trial) {
            const std::string output = scratch.file("out" + std::to_string(trial) + (exporting ? "e" : "i"));
            const pid_t pid = spawn(arguments(output), scratch.file("out.txt"), scratch.file("err.txt"));
            std::this_thread::sleep_for(duration * (40 + 15 * trial) / 100);
            ::kill(pid, SIGTERM);
            const Outcome outcome =
                wait_for(pid, scratch.file("out.txt"), scratch.file("err.txt"), std::chrono::seconds(60));
            SCOPED_TRACE(output);
            EXPECT_FALSE(outcome.hung);
            if (outcome.exit_status == 1) {
                ++stopped_mid_way;
                std::string line;
                EXPECT_TRUE(is_one_error_line(outcome.err, line));
                EXPECT_NE(line.find(output + ": stopped by signal 15"), std::string::npos) << line;
            } else if (outcome.exit_status != 0) {
                EXPECT_EQ(outcome.exit_status, 128 + SIGTERM)
                    << outcome.err;  // before the handler was installed
            }
            const bool complete = fs::exists(output + (exporting ? "/model.safetensors" : "/checkpoints"));
            EXPECT_EQ(fs::exists(output), complete);
            for (const fs::directory_entry& entry : fs::directory_iterator(scratch.path()))
                EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << entry.path();
        }
    }
    EXPECT_GE(stopped_mid_way, 1) << "no trial's signal arrived while the work ran";
}

}  // namespace
}  // namespace mixgpt
