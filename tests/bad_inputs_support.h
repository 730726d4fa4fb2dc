// The machinery of the bad-input suites (tests/test_bad_inputs*.cpp): `mixgpt` run as a user would,
// against a fixture directory of inputs, and checked for what every bad input must give: the exit
// status given (1: the library refused, 2: the command line did), no crash signal, no hang, one
// error line on stderr naming the problem (any other stderr line is a timestamped log line before
// it), and every file that existed before unchanged (sha256) with no file added or removed.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "core/sha256.h"
#include "model/checkpoint.h"
#include "tests/test_process_support.h"
#include "tests/test_support.h"
#include "tests/test_train_support.h"
#include "train/trainer.h"

namespace mixgpt::test {

// Path -> sha256 of every regular file under `root`.
inline std::map<std::string, std::string> file_hashes(const std::string& root) {
    std::map<std::string, std::string> hashes;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root))
        if (entry.is_regular_file()) hashes[entry.path().string()] = sha256_file_hex(entry.path().string());
    return hashes;
}

// The error line: the one "mixgpt: " line, the last one; lines before it are log lines.
inline ::testing::AssertionResult is_one_error_line(const std::string& err, std::string& line) {
    const std::vector<std::string> lines = lines_of(err);
    if (lines.empty()) return ::testing::AssertionFailure() << "nothing on stderr";
    line = lines.back();
    if (line.rfind("mixgpt: ", 0) != 0)
        return ::testing::AssertionFailure() << "last line is not an error: " << err;
    static const std::regex log_line(R"(^\[\d\d:\d\d:\d\d (info|warning)\] .*)");
    for (size_t i = 0; i + 1 < lines.size(); ++i)
        if (!std::regex_match(lines[i], log_line))
            return ::testing::AssertionFailure()
                   << "stderr line " << i + 1 << " is neither a log line nor the error: " << err;
    return ::testing::AssertionSuccess();
}

struct BadInput {
    std::string name;
    std::vector<std::string> arguments;  // {D}: the fixture directory, {DATA}: a prepared dataset
    int status;                          // 1: refused by the library, 2: by the command line
    std::vector<std::string> expected;   // each must appear in the error line
};

// A fixture directory every case may read: data/ (a prepared dataset), corpus/ (three of its
// documents), run/ (a 2-step training run: checkpoints/step_00000002.h5, metrics.jsonl).
inline std::unique_ptr<TempDirectory> make_bad_input_fixture(const std::string& prefix) {
    auto fixture = std::make_unique<TempDirectory>(prefix);
    const TempDirectory& d = *fixture;
    std::filesystem::copy(testing_support::tiny_dataset().directory, d.file("data"));
    std::filesystem::create_directories(d.file("corpus"));
    for (const char* name : {"doc1000.txt", "doc1001.txt", "doc1002.txt"})
        std::filesystem::copy(testing_support::tiny_dataset().corpus_directory + "/" + name,
                              d.file(std::string("corpus/") + name));
    const Outcome trained =
        wait_for(spawn({"train", "--dataset", d.file("data"), "--model", "d2", "--n-embd", "32", "-b", "4",
                        "-t", "16", "--threads", "1", "--steps", "2", "-o", d.file("run")},
                       d.file("out.txt"), d.file("err.txt")),
                 d.file("out.txt"), d.file("err.txt"));
    EXPECT_EQ(trained.exit_status, 0) << trained.err;
    std::filesystem::remove(d.file("out.txt"));
    std::filesystem::remove(d.file("err.txt"));
    return fixture;
}

// Runs cases against a fixture directory; the commands' stdout and stderr go elsewhere.
class BadInputRunner {
public:
    explicit BadInputRunner(const TempDirectory& fixture) : fixture_(fixture) {}

    std::string substitute(std::string text) const {
        for (const auto& [key, value] : {std::pair<std::string, std::string>{"{DATA}", fixture_.file("data")},
                                         {"{D}", fixture_.path()}}) {
            for (size_t at = text.find(key); at != std::string::npos; at = text.find(key))
                text.replace(at, key.size(), value);
        }
        return text;
    }

    std::vector<std::string> substitute_all(const std::vector<std::string>& arguments) const {
        std::vector<std::string> substituted;
        for (const std::string& argument : arguments) substituted.push_back(substitute(argument));
        return substituted;
    }

    // `mixgpt arguments...` (placeholders substituted), killed and reported hung after `deadline`.
    Outcome run(const std::vector<std::string>& arguments, const SpawnLimits& limits = {},
                std::chrono::seconds deadline = std::chrono::seconds(60)) const {
        return wait_for(
            spawn(substitute_all(arguments), output_.file("out.txt"), output_.file("err.txt"), limits),
            output_.file("out.txt"), output_.file("err.txt"), deadline);
    }

    // Runs one case; checks everything the file comment lists. Returns the error line.
    std::string check(const BadInput& bad, const SpawnLimits& limits = {}) const {
        SCOPED_TRACE(bad.name);
        const std::map<std::string, std::string> before = file_hashes(fixture_.path());
        const Outcome outcome = run(bad.arguments, limits);
        EXPECT_FALSE(outcome.hung);
        EXPECT_FALSE(outcome.signaled) << outcome.err;
        EXPECT_EQ(outcome.exit_status, bad.status) << outcome.err;
        std::string line;
        EXPECT_TRUE(is_one_error_line(outcome.err, line));
        for (const std::string& expected : bad.expected)
            EXPECT_NE(line.find(substitute(expected)), std::string::npos)
                << "'" << expected << "' not in: " << line;
        expect_unchanged(before);
        return line;
    }

    // Every file of `before` still there with the same content, and none added.
    void expect_unchanged(const std::map<std::string, std::string>& before) const {
        const std::map<std::string, std::string> after = file_hashes(fixture_.path());
        for (const auto& [path, hash] : before) {
            const auto found = after.find(path);
            EXPECT_TRUE(found != after.end() && found->second == hash) << path << " changed or removed";
        }
        for (const auto& [path, hash] : after) EXPECT_TRUE(before.count(path) == 1) << path << " was added";
    }

private:
    const TempDirectory& fixture_;
    TempDirectory output_{"mixgpt_bad_inputs_output"};
};

// A process id that no process has any more: a child that has exited and been reaped.
inline pid_t gone_pid() {
    const pid_t child = fork();
    if (child == 0) _exit(0);
    waitpid(child, nullptr, 0);
    return child;
}

// A tiny training command; `extra` adds options or replaces the default of the same name.
inline std::vector<std::string> train_with(const std::vector<std::string>& extra,
                                           const std::string& output = "{D}/new_run") {
    const std::vector<std::pair<std::string, std::string>> defaults = {
        {"--dataset", "{DATA}"}, {"--model", "d2"}, {"--n-embd", "32"}, {"-b", "4"}, {"-t", "16"},
        {"--threads", "1"},      {"--steps", "2"},  {"-o", output}};
    std::vector<std::string> arguments = {"train"};
    for (const auto& [option, value] : defaults)
        if (std::find(extra.begin(), extra.end(), option) == extra.end())
            arguments.insert(arguments.end(), {option, value});
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    return arguments;
}

}  // namespace mixgpt::test
