// `mixgpt prepare` and `train` as processes, where only a real process shows the behaviour: kill -9
// during prepare then --resume gives the bytes of an uninterrupted run; SIGTERM leaves no
// temporary; '-' reads standard input; a dataset overwritten while a run reads it ends the run in
// one line with its last checkpoint intact.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "core/log.h"
#include "core/sha256.h"
#include "model/checkpoint.h"
#include "tests/test_process_support.h"
#include "tests/test_support.h"
#include "tests/test_tokenizer_support.h"
#include "tests/test_train_support.h"
#include "tokenizer/prepare.h"
#include "train/trainer.h"

namespace mixgpt {
namespace {

using test::Outcome;
using test::TempDirectory;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Starts mixgpt with stdin read from `stdin_path` ("" : inherited).
pid_t spawn_with_input(const std::vector<std::string>& arguments, const std::string& stdin_path,
                       const TempDirectory& logs) {
    if (stdin_path.empty()) return test::spawn(arguments, logs.file("out.txt"), logs.file("err.txt"));
    std::vector<std::string> storage = {test::mixgpt_binary()};
    storage.insert(storage.end(), arguments.begin(), arguments.end());
    std::vector<char*> argv;
    for (std::string& argument : storage) argv.push_back(argument.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        const int in = ::open(stdin_path.c_str(), O_RDONLY);
        const int out = ::open(logs.file("out.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int err = ::open(logs.file("err.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(in, STDIN_FILENO);
        dup2(out, STDOUT_FILENO);
        dup2(err, STDERR_FILENO);
        execv(argv[0], argv.data());
        _exit(127);
    }
    return pid;
}

Outcome finish(pid_t pid, const TempDirectory& logs) {
    return test::wait_for(pid, logs.file("out.txt"), logs.file("err.txt"), std::chrono::seconds(120));
}

// Waits until `path` exists (or the process ends); true when it does.
bool wait_for_file(const std::string& path, pid_t pid) {
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (Clock::now() < deadline) {
        if (fs::exists(path)) return true;
        int status = 0;
        if (waitpid(pid, &status, WNOHANG) == pid) return fs::exists(path);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
}

std::map<std::string, std::string> shard_hashes(const std::string& folder) {
    std::map<std::string, std::string> hashes;
    for (const auto& entry : fs::directory_iterator(folder)) {
        if (entry.path().extension() == ".h5")
            hashes[entry.path().filename().string()] = sha256_file_hex(entry.path());
    }
    return hashes;
}

std::vector<std::string> temporaries(const std::string& folder) {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(folder)) {
        if (entry.path().filename().string().find(".tmp-") != std::string::npos)
            found.push_back(entry.path().string());
    }
    return found;
}

class DatasetProcessTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        corpus_ = new TempDirectory("mixgpt_process_corpus");
        std::string text;
        for (const std::string& document : testing::multilingual_documents(2500, 51))
            text += document + "\n<DOC>\n";
        corpus_->write("corpus.txt", text);
    }
    static void TearDownTestSuite() {
        delete corpus_;
        corpus_ = nullptr;
    }
    static std::string corpus() { return corpus_->file("corpus.txt"); }

    std::vector<std::string> prepare_arguments(const std::string& output) const {
        return {"prepare",
                "--output",
                output,
                "--tokenizer",
                testing::tiny_tokenizer_path(),
                "--doc-sep",
                "<DOC>",
                "--shard-tokens",
                "20000",
                "--threads",
                "1",
                "--seed",
                "4",
                corpus()};
    }
    // The same dataset made in one go, in process.
    std::string uninterrupted(const TempDirectory& directory) const {
        PrepareOptions options;
        options.corpus.inputs = {corpus()};
        options.corpus.doc_separator = "<DOC>";
        options.output_directory = directory.file("whole");
        options.tokenizer_path = testing::tiny_tokenizer_path();
        options.shard_tokens = 20000;
        options.threads = 1;
        options.seed = 4;
        run_prepare(options);
        return options.output_directory;
    }

    static inline TempDirectory* corpus_ = nullptr;
    TempDirectory logs_{"mixgpt_process_logs"};
};

TEST_F(DatasetProcessTest, KillNineThenResumeGivesTheBytesOfAnUninterruptedRun) {
    TempDirectory directory;
    const std::string output = directory.file("killed");
    const pid_t pid = spawn_with_input(prepare_arguments(output), "", logs_);
    ASSERT_TRUE(wait_for_file(output + "/shard-000001.h5", pid));
    kill(pid, SIGKILL);
    const Outcome killed = finish(pid, logs_);
    ASSERT_TRUE(killed.signaled) << "prepare ended before the kill: make the corpus larger";
    ASSERT_FALSE(fs::exists(output + "/index.json"));

    std::vector<std::string> resume = prepare_arguments(output);
    resume.push_back("--resume");
    const Outcome resumed = finish(spawn_with_input(resume, "", logs_), logs_);
    ASSERT_EQ(resumed.exit_status, 0) << resumed.err;
    EXPECT_NE(resumed.err.find("resuming after"), std::string::npos) << resumed.err;
    EXPECT_TRUE(temporaries(output).empty());
    EXPECT_FALSE(fs::exists(output + "/progress.json"));
    const std::map<std::string, std::string> expected = shard_hashes(uninterrupted(directory));
    EXPECT_GE(expected.size(), 4u);
    EXPECT_EQ(shard_hashes(output), expected);
}

TEST_F(DatasetProcessTest, SigtermStopsWithOneLineAndNoTemporary) {
    TempDirectory directory;
    const std::string output = directory.file("stopped");
    const pid_t pid = spawn_with_input(prepare_arguments(output), "", logs_);
    ASSERT_TRUE(wait_for_file(output + "/shard-000000.h5", pid));
    kill(pid, SIGTERM);
    const Outcome stopped = finish(pid, logs_);
    ASSERT_FALSE(stopped.signaled);
    EXPECT_EQ(stopped.exit_status, 1) << stopped.err;
    const std::vector<std::string> lines = test::lines_of(stopped.err);
    ASSERT_FALSE(lines.empty());
    EXPECT_NE(lines.back().find("stopped by a signal"), std::string::npos) << lines.back();
    EXPECT_NE(lines.back().find("--resume"), std::string::npos) << lines.back();
    EXPECT_TRUE(temporaries(output).empty());
    std::vector<std::string> resume = prepare_arguments(output);
    resume.push_back("--resume");
    ASSERT_EQ(finish(spawn_with_input(resume, "", logs_), logs_).exit_status, 0);
    EXPECT_EQ(shard_hashes(output), shard_hashes(uninterrupted(directory)));
}

TEST_F(DatasetProcessTest, StandardInputIsReadOnceAsJsonLines) {
    TempDirectory directory;
    std::string lines;
    for (const std::string& document : testing::multilingual_documents(40, 52)) {
        std::string escaped;
        for (char c : document) {
            if (c == '\n')
                escaped += "\\n";
            else if (c == '"' || c == '\\')
                escaped += std::string("\\") + c;
            else if (c == '\t')
                escaped += "\\t";
            else
                escaped += c;
        }
        lines += "{\"text\": \"" + escaped + "\"}\n";
    }
    const std::string file = directory.write("docs.jsonl.zst", testing::zstd_compressed(lines));
    const std::vector<std::string> common = {
        "--tokenizer-sample-bytes", "20000", "--vocab-size", "600", "--threads", "1"};
    std::vector<std::string> from_stdin = {"prepare", "--output", directory.file("piped"), "-"};
    std::vector<std::string> from_file = {"prepare", "--output", directory.file("file"), file};
    from_stdin.insert(from_stdin.end(), common.begin(), common.end());
    from_file.insert(from_file.end(), common.begin(), common.end());
    const Outcome piped = finish(spawn_with_input(from_stdin, file, logs_), logs_);
    ASSERT_EQ(piped.exit_status, 0) << piped.err;
    ASSERT_EQ(finish(spawn_with_input(from_file, "", logs_), logs_).exit_status, 0);
    EXPECT_EQ(testing::read_file(directory.file("piped/tokenizer.model")),
              testing::read_file(directory.file("file/tokenizer.model")));
    EXPECT_EQ(shard_hashes(directory.file("piped")), shard_hashes(directory.file("file")));
    EXPECT_EQ(read_dataset_info(directory.file("piped")).train.documents +
                  read_dataset_info(directory.file("piped")).val.documents,
              40);
}

TEST_F(DatasetProcessTest, ADatasetOverwrittenDuringTrainingEndsTheRunInOneLine) {
    TempDirectory directory;
    const std::string dataset = directory.file("data");
    fs::copy(testing_support::tiny_dataset().directory, dataset);
    const std::string other = directory.file("other");
    run_prepare(
        testing_support::tiny_prepare_options(testing_support::tiny_dataset().corpus_directory, other, 300));
    const std::string run = directory.file("run");
    const pid_t pid = spawn_with_input(
        {"train", "--dataset", dataset, "--model", "d2", "--n-embd", "32", "-b", "4", "-t", "16", "--threads",
         "1", "--steps", "100000", "--checkpoint-interval", "3", "-o", run},
        "", logs_);
    const std::string first_checkpoint = checkpoint_path(checkpoint_directory(run), 3);
    ASSERT_TRUE(wait_for_file(first_checkpoint, pid));
    const std::string shard = dataset + "/shard-000000.h5";
    fs::copy_file(other + "/shard-000000.h5", shard, fs::copy_options::overwrite_existing);  // as `cp` does
    const Outcome outcome = finish(pid, logs_);
    EXPECT_FALSE(outcome.hung);
    EXPECT_FALSE(outcome.signaled) << outcome.err;
    EXPECT_EQ(outcome.exit_status, 1) << outcome.err;
    const std::vector<std::string> lines = test::lines_of(outcome.err);
    ASSERT_FALSE(lines.empty());
    const std::string& last = lines.back();
    EXPECT_NE(last.find(shard + ": "), std::string::npos) << last;
    EXPECT_NE(last.find("while this run read it"), std::string::npos) << last;
    EXPECT_NE(last.find("is intact"), std::string::npos) << last;
    const std::string newest = newest_valid_checkpoint(checkpoint_directory(run));
    ASSERT_FALSE(newest.empty());
    EXPECT_NE(last.find(newest), std::string::npos) << last;
}

}  // namespace
}  // namespace mixgpt
