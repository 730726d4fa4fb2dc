// What mixgpt may replace when it writes a file whole (core/output_file.h): only regular files, by
// rename; a pipe is written through; an input of the command never.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <thread>

#include "core/output_file.h"
#include "tests/test_process_support.h"
#include "tests/test_support.h"

namespace mixgpt {
namespace {

namespace fs = std::filesystem;

TEST(OutputFile, ReplacesARegularFileAndWhatALinkNamesByRename) {
    test::TempDirectory dir;
    const std::string target = dir.write("report.json", "old");
    fs::create_symlink(target, dir.file("latest.json"));
    {
        OutputFile output(dir.file("latest.json"));
        EXPECT_EQ(test::read_text(target), "old");  // nothing replaced before write()
        output.write("new\n");
    }
    EXPECT_TRUE(fs::is_symlink(dir.file("latest.json")));
    EXPECT_EQ(test::read_text(target), "new\n");
    { OutputFile abandoned(target); }
    EXPECT_EQ(test::read_text(target), "new\n");
    EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()),
              2);  // no temporary
}

// A link whose target does not exist yet was replaced by the file; through a chain of two links
// to a relative target, the target is made and both links stay.
TEST(OutputFile, MakesWhatADanglingLinkNames) {
    test::TempDirectory dir;
    fs::create_directories(dir.file("reports"));
    fs::create_symlink("reports/made.json", dir.file("first.json"));
    fs::create_symlink(dir.file("first.json"), dir.file("second.json"));
    OutputFile(dir.file("second.json")).write("made\n");
    EXPECT_TRUE(fs::is_symlink(dir.file("first.json")));
    EXPECT_TRUE(fs::is_symlink(dir.file("second.json")));
    EXPECT_EQ(test::read_text(dir.file("reports/made.json")), "made\n");

    fs::create_symlink(dir.file("absent/made.json"), dir.file("nowhere.json"));
    const std::string message = test::error_of([&] { OutputFile output(dir.file("nowhere.json")); });
    EXPECT_NE(message.find(dir.file("nowhere.json") + ": cannot create its link's target " +
                           dir.file("absent/made.json") + " (No such file or directory)"),
              std::string::npos)
        << message;
    EXPECT_TRUE(fs::is_symlink(dir.file("nowhere.json")));
}

TEST(OutputFile, WritesThroughAPipe) {
    test::TempDirectory dir;
    const std::string pipe = dir.file("pipe");
    ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
    std::string received;
    std::thread reader([&] { received = test::read_text(pipe); });
    OutputFile(pipe).write("through\n");
    reader.join();
    EXPECT_EQ(received, "through\n");
    EXPECT_TRUE(fs::is_fifo(pipe));
}

TEST(OutputFile, RefusesAnInputInOneLine) {
    test::TempDirectory dir;
    const std::string task = dir.write("task.jsonl", "{}\n");
    fs::create_hard_link(task, dir.file("same.jsonl"));
    for (const std::string& output : {task, dir.file("same.jsonl")}) {
        const std::string message = test::error_of([&] {
            OutputFile(output, {dir.file("absent"), task}, "--per-example");
        });
        EXPECT_NE(message.find(output + ": is an input of this command"), std::string::npos) << message;
        EXPECT_NE(message.find("choose another --per-example"), std::string::npos) << message;
    }
    EXPECT_EQ(test::read_text(task), "{}\n");
}

}  // namespace
}  // namespace mixgpt
